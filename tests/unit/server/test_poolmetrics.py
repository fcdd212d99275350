"""Pool metrics in process, over an in-process index: the gauges as /metrics serves them,
held devices, the per-pool bound, refresh after a change (and not on a scrape), a refresh
of 10,000 pools that lets other tasks run, refreshes after changes that read only the pools
changed and equal one from scratch, and the review latency histogram."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from apiserver.pools import PoolSummary
from apiserver.server.poolmetrics import PoolKey, PoolMetrics, review_histogram, timed
from devtools.waiting import eventually


class Index:
    """Pools by key with their summaries and allocated device names; yields every
    ``budget`` pools as ``PoolIndex.summaries`` does."""

    def __init__(self, budget: int = 100) -> None:
        self.summaries_of: dict[PoolKey, PoolSummary] = {}
        self.allocated: dict[PoolKey, set[str]] = {}
        self.listeners: list[Callable[[PoolKey], None]] = []
        self.budget = budget
        self.yields = 0
        self.read: list[PoolKey] = []
        """The pools read one by one."""

    def put(
        self,
        driver: str,
        pool: str,
        total: int,
        allocated: set[str],
        unavailable: int = 0,
        node: str | None = None,
    ) -> None:
        key = (driver, pool)
        self.summaries_of[key] = PoolSummary(
            driver, pool, node, 1, 1, total, len(allocated), unavailable
        )
        self.allocated[key] = allocated
        for listener in self.listeners:
            listener(key)

    def pool_keys(self) -> list[PoolKey]:
        return sorted(self.summaries_of)

    async def summaries(self, driver: str, pool: str | None = None) -> list[PoolSummary]:
        if pool is not None:  # one pool: as the index, no sort of them all
            self.read.append((driver, pool))
            self.yields += 1
            await asyncio.sleep(0)
            found = self.summaries_of.get((driver, pool))
            return [found] if found is not None else []
        out = []
        for i, key in enumerate(k for k in self.pool_keys() if k[0] == driver):
            if i % self.budget == 0:
                self.yields += 1
                await asyncio.sleep(0)
            out.append(self.summaries_of[key])
        return out

    def on_change(self, listener: Callable[[PoolKey], None]) -> None:
        self.listeners.append(listener)


def samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for s in family.samples
    }


def labels(driver: str, pool: str, node: str = "") -> tuple[tuple[str, str], ...]:
    return (("driver", driver), ("node", node), ("pool", pool))


async def test_gauges_per_pool_and_driver_with_held_devices() -> None:
    index = Index()
    index.put("gpu", "node-1", 4, {"a", "b"}, unavailable=1, node="node-1")
    index.put("gpu", "fabric", 2, set())
    index.put("nic", "n", 3, {"x"})
    reserved = {("gpu", "node-1", "c"), ("gpu", "node-1", "a"), ("nic", "n", "y")}
    registry = CollectorRegistry()
    metrics = PoolMetrics(index, lambda: reserved, registry)
    await metrics.refresh()
    got = samples(registry)
    one = labels("gpu", "node-1", "node-1")
    assert got[("dra_pool_devices", one)] == 4
    assert got[("dra_pool_allocated_devices", one)] == 2
    assert got[("dra_pool_unavailable_devices", one)] == 1
    assert got[("dra_pool_available_devices", one)] == 1
    assert got[("dra_pool_held_devices", one)] == 2
    assert got[("dra_pool_held_devices", labels("nic", "n"))] == 1
    assert got[("dra_pool_held_devices", labels("gpu", "fabric"))] == 0
    assert got[("dra_driver_devices", (("driver", "gpu"),))] == 6
    assert got[("dra_driver_available_devices", (("driver", "gpu"),))] == 3
    assert got[("dra_driver_held_devices", (("driver", "gpu"),))] == 2
    assert got[("dra_driver_pools", (("driver", "gpu"),))] == 2
    assert got[("dra_driver_pools", (("driver", "nic"),))] == 1
    assert got[("dra_reservation_held_devices", ())] == 3
    assert got[("dra_pool_metrics_per_pool", ())] == 1


async def test_beyond_max_pools_only_driver_totals() -> None:
    index = Index()
    for i in range(3):
        index.put("gpu", f"p{i}", 2, {"d"})
    registry = CollectorRegistry()
    metrics = PoolMetrics(index, set, registry, max_pools=2)
    await metrics.refresh()
    got = samples(registry)
    assert not [
        name
        for name, _ in got
        if name.startswith("dra_pool_") and name != ("dra_pool_metrics_per_pool")
    ]
    assert got[("dra_pool_metrics_per_pool", ())] == 0
    assert got[("dra_driver_devices", (("driver", "gpu"),))] == 6
    assert got[("dra_driver_allocated_devices", (("driver", "gpu"),))] == 3
    metrics.max_pools = 3
    await metrics.refresh()
    assert samples(registry)[("dra_pool_devices", labels("gpu", "p2"))] == 2


def test_a_negative_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="--metrics-max-pools"):
        PoolMetrics(Index(), set, CollectorRegistry(), max_pools=-1)


async def test_a_change_is_exported_by_the_background_refresh_not_by_a_scrape() -> None:
    index = Index()
    index.put("gpu", "p", 2, set())
    registry = CollectorRegistry()
    metrics = PoolMetrics(index, set, registry, interval=60, min_interval=0)
    await metrics.start()
    try:
        await eventually(lambda: metrics.refreshes >= 1, "the first refresh")
        refreshes = metrics.refreshes
        for _ in range(3):
            samples(registry)
        assert metrics.refreshes == refreshes  # scrapes read, never compute
        index.put("gpu", "p", 2, {"d"})
        await eventually(
            lambda: samples(registry).get(("dra_pool_allocated_devices", labels("gpu", "p"))) == 1,
            "the allocation on /metrics",
        )
    finally:
        await metrics.close()


async def test_ten_thousand_pools_refresh_while_other_tasks_run() -> None:
    index = Index(budget=100)
    for i in range(10_000):
        index.put(f"driver-{i % 4}", f"pool-{i:05}", 8, {"d0"})
    registry = CollectorRegistry()
    metrics = PoolMetrics(index, set, registry)
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await metrics.refresh()
    done.set()
    await task
    assert index.yields >= 100
    assert ticks >= 50  # the other task ran between the refresh's slices
    got = samples(registry)
    assert got[("dra_pool_metrics_per_pool", ())] == 0  # beyond the default bound
    assert sum(v for (n, _), v in got.items() if n == "dra_driver_devices") == 80_000
    assert sum(v for (n, _), v in got.items() if n == "dra_driver_pools") == 10_000


async def test_review_latency_is_observed_for_answers_and_failures() -> None:
    registry = CollectorRegistry()
    histogram = review_histogram(registry)

    async def answer(review: str, user: str) -> str:
        if review == "bad":
            raise RuntimeError(user)
        return review.upper()

    reviewer = timed(histogram, answer)
    assert await reviewer("ok", "alice") == "OK"
    with pytest.raises(RuntimeError):
        await reviewer("bad", "alice")
    assert samples(registry)[("dra_allocation_review_duration_seconds_count", ())] == 2


@pytest.mark.parametrize("seed", range(4))
async def test_a_refresh_after_changes_equals_one_from_scratch(seed: int) -> None:
    rng = random.Random(seed)
    index = Index()
    for i in range(40):
        index.put(f"driver-{i % 3}", f"pool-{i:02}", 4, set())
    held: set[tuple[str, str, str]] = set()

    def reserved() -> set[tuple[str, str, str]]:
        return set(held)

    metrics = PoolMetrics(index, reserved, CollectorRegistry())
    await metrics.refresh()
    for _ in range(10):
        changed = rng.sample(sorted(index.summaries_of), 3)
        for driver, pool in changed:
            index.put(driver, pool, rng.randrange(2, 9), {f"d{j}" for j in range(rng.randrange(2))})
        if rng.random() < 0.3:
            gone = changed[0]
            del index.summaries_of[gone]
            for listener in index.listeners:
                listener(gone)
        driver, pool = rng.choice(sorted(index.summaries_of))
        held.symmetric_difference_update({(driver, pool, f"d{rng.randrange(3)}")})
        index.read.clear()
        await metrics.refresh()
        assert set(index.read) == {*changed, (driver, pool)}  # what changed, nothing else
        fresh = PoolMetrics(index, reserved, CollectorRegistry())
        await fresh.refresh()
        assert metrics.rows == fresh.rows

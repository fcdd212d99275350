"""Pool availability on /metrics: device counts per pool and per driver, the devices
reservations hold, and how long an AllocationReview takes.

Gauges (devices of the newest generation of each pool, as a ResourcePoolStatusRequest
counts them):

* ``dra_pool_devices``, ``dra_pool_allocated_devices``, ``dra_pool_available_devices``,
  ``dra_pool_unavailable_devices`` with labels ``driver``, ``pool``, ``node`` (``""`` when the
  pool's devices are not on one node), and ``dra_pool_held_devices``: devices a live
  DeviceReservation holds for an allocation in flight (the pool index counts them as
  allocated, as pool status does, until the releaser deletes the reservation once the
  claims' allocations hold them: held is the part of allocated not yet written);
* ``dra_driver_pools``, ``dra_driver_devices``, ``dra_driver_allocated_devices``,
  ``dra_driver_held_devices``, ``dra_driver_available_devices``,
  ``dra_driver_unavailable_devices`` with label ``driver``: the same summed over its pools;
* ``dra_reservation_held_devices``: devices live reservations hold, in every pool;
* ``dra_pool_metrics_per_pool``: 1 while per-pool series are exported, 0 when there are more
  pools than ``max_pools`` (then only the per-driver totals are: the series a scrape carries
  stay bounded whatever the cluster holds).

And the histogram ``dra_allocation_review_duration_seconds`` (``timed`` wraps the reviewer).

A scrape never computes anything: ``PoolMetrics`` keeps the rows current in the background
(after a pool changes, at most every ``min_interval`` seconds, and every ``interval`` seconds
for reservations that lapse without an event), reading through ``PoolIndex.summaries`` the
pools that changed since (or whose held devices did), yielding to the event loop as it
goes; the collector hands out the last rows it made.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Protocol, TypeVar

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..pools import PoolSummary
from ..tasks import BackgroundTask
from ..toolkit.pacing import Pacer

log = logging.getLogger(__name__)

MAX_POOLS_DEFAULT = 500
"""Per-pool series are exported up to this many pools (five series each): a scrape formats
every sample on the event loop (20-30 µs each on a loaded 2-core machine, see
bench/RESULTS.md), so the bound is also what a scrape may hold the loop for."""

SLICE = 0.005
"""Seconds a refresh works between yields to the event loop."""

REVIEW_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

PoolKey = tuple[str, str]
DeviceID = tuple[str, str, str]
T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")

COUNTS = (
    "devices",
    "allocated_devices",
    "held_devices",
    "available_devices",
    "unavailable_devices",
)
HELP = {
    "devices": "Devices in the newest generation of the pool's slices.",
    "allocated_devices": "Devices that claims' allocations or reservations hold.",
    "held_devices": "Devices a live reservation holds (counted in allocated).",
    "available_devices": "Devices neither allocated nor unavailable.",
    "unavailable_devices": "Devices not allocated that cannot be allocated now (taints,"
    " used-up counters).",
}


class PoolReader(Protocol):
    """What the metrics read of the pool index (its public methods)."""

    def pool_keys(self) -> list[PoolKey]: ...

    async def summaries(self, driver: str, pool: str | None = None) -> list[PoolSummary]: ...

    def on_change(self, listener: Callable[[PoolKey], None]) -> None: ...


@dataclass(frozen=True, slots=True)
class PoolRow:
    driver: str
    pool: str
    node: str
    devices: int
    allocated_devices: int
    held_devices: int
    available_devices: int
    unavailable_devices: int


@dataclass(frozen=True, slots=True)
class Rows:
    pools: tuple[PoolRow, ...] = ()
    drivers: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """Per driver: its pool count, then the sums of ``COUNTS`` over its pools."""
    reserved: int = 0
    per_pool: bool = True


def driver_totals(rows: list[PoolRow]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    totals: dict[str, list[int]] = {}
    for row in rows:
        sums = totals.setdefault(row.driver, [0] * (len(COUNTS) + 1))
        sums[0] += 1
        for i, name in enumerate(COUNTS, 1):
            sums[i] += getattr(row, name)
    return tuple((driver, tuple(sums)) for driver, sums in totals.items())


class PoolMetrics:
    """A service that keeps the pool rows current and a collector that exports them."""

    def __init__(
        self,
        pools: PoolReader,
        reserved: Callable[[], set[DeviceID]],
        registry: CollectorRegistry,
        *,
        max_pools: int = MAX_POOLS_DEFAULT,
        interval: float = 5.0,
        min_interval: float = 1.0,
    ) -> None:
        """``reserved``: the devices live reservations hold now."""
        if max_pools < 0:
            raise ValueError("--metrics-max-pools must be 0 or more")
        self.pools = pools
        self.reserved = reserved
        self.max_pools = max_pools
        self.interval = interval
        self.min_interval = min_interval
        self.slice = SLICE
        self.rows = Rows()
        self.refreshes = 0
        self._dirty = asyncio.Event()
        self._by_key: dict[PoolKey, PoolRow] = {}
        """The last refresh's rows."""
        self._stale: set[PoolKey] | None = None
        """Pools changed since the last refresh (None: every pool, as before the first)."""
        self._held: dict[PoolKey, set[str]] = {}
        """Per pool, the devices reservations held at the last refresh."""
        self._task = BackgroundTask("pool metrics", self._run, log)
        pools.on_change(self._changed)
        registry.register(_RowsCollector(self))

    def _changed(self, key: PoolKey) -> None:
        if self._stale is not None:
            self._stale.add(key)
        self._dirty.set()

    async def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.close()

    def readiness(self) -> dict[str, bool]:
        return {}

    async def _run(self) -> None:
        while True:
            self._dirty.clear()
            began = time.monotonic()
            await self.refresh()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._dirty.wait(), self.interval)
            # Changes come in bursts (a driver publishing its slices): one refresh for many.
            await asyncio.sleep(max(0.0, self.min_interval - (time.monotonic() - began)))

    async def refresh(self) -> None:
        """Make the rows again from the index's summaries and the held reservations: every
        pool's on the first refresh, then only those of pools that changed or whose held
        devices did (a cluster of thousands of pools changes a few at a time)."""
        reserved: dict[PoolKey, set[str]] = {}
        for driver, pool, device in self.reserved():
            reserved.setdefault((driver, pool), set()).add(device)
        stale, self._stale = self._stale, set()
        held = {
            k for k in reserved.keys() | self._held.keys() if reserved.get(k) != self._held.get(k)
        }
        self._held = reserved
        if stale is None:
            await self._read_all(reserved)
        elif stale or held:
            await self._read(stale | held, reserved)
        elif (len(self._by_key) <= self.max_pools) == self.rows.per_pool:
            self.refreshes += 1  # nothing changed (nor the bound): the rows stand
            return
        rows = [self._by_key[k] for k in sorted(self._by_key)]
        # The sums are made here, not in a scrape, which then costs what the series it
        # writes cost.
        self.rows = Rows(
            tuple(rows) if len(rows) <= self.max_pools else (),
            driver_totals(rows),
            sum(len(names) for names in reserved.values()),
            per_pool=len(rows) <= self.max_pools,
        )
        self.refreshes += 1

    async def _read_all(self, reserved: dict[PoolKey, set[str]]) -> None:
        """Every pool's row, driver by driver."""
        self._by_key = {}
        pacer = Pacer(self.slice)
        for driver in sorted({driver for driver, _ in self.pools.pool_keys()}):
            for summary in await self.pools.summaries(driver):
                self._by_key[(driver, summary.pool)] = _row(driver, summary, reserved)
                await pacer.tick()

    async def _read(self, keys: set[PoolKey], reserved: dict[PoolKey, set[str]]) -> None:
        """The rows of ``keys`` again (a pool with no summary left is gone)."""
        pacer = Pacer(self.slice)
        for driver, pool in sorted(keys):
            found = await self.pools.summaries(driver, pool)
            if found:
                self._by_key[(driver, pool)] = _row(driver, found[0], reserved)
            else:
                self._by_key.pop((driver, pool), None)
            await pacer.tick()


def _row(driver: str, summary: PoolSummary, reserved: dict[PoolKey, set[str]]) -> PoolRow:
    return PoolRow(
        driver,
        summary.pool,
        summary.node_name or "",
        summary.total,
        summary.allocated,
        len(reserved.get((driver, summary.pool), ())),
        summary.available,
        summary.unavailable,
    )


class _RowsCollector(Collector):
    def __init__(self, metrics: PoolMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        rows = self.metrics.rows
        yield GaugeMetricFamily(
            "dra_pool_metrics_per_pool",
            "1 while per-pool series are exported, 0 beyond --metrics-max-pools pools.",
            value=1 if rows.per_pool else 0,
        )
        yield GaugeMetricFamily(
            "dra_reservation_held_devices",
            "Devices live DeviceReservations hold.",
            value=rows.reserved,
        )
        if rows.per_pool:
            for name in COUNTS:
                family = GaugeMetricFamily(
                    f"dra_pool_{name}", HELP[name], labels=["driver", "pool", "node"]
                )
                for row in rows.pools:
                    family.add_metric([row.driver, row.pool, row.node], getattr(row, name))
                yield family
        pools = GaugeMetricFamily("dra_driver_pools", "Pools with slices.", labels=["driver"])
        for driver, sums in rows.drivers:
            pools.add_metric([driver], sums[0])
        yield pools
        for i, name in enumerate(COUNTS, 1):
            family = GaugeMetricFamily(f"dra_driver_{name}", HELP[name], labels=["driver"])
            for driver, sums in rows.drivers:
                family.add_metric([driver], sums[i])
            yield family


def review_histogram(registry: CollectorRegistry) -> Histogram:
    return Histogram(
        "dra_allocation_review_duration_seconds",
        "Time to answer an AllocationReview, reservation included.",
        buckets=REVIEW_BUCKETS,
        registry=registry,
    )


def timed(
    histogram: Histogram, reviewer: Callable[[A, B], Awaitable[T]]
) -> Callable[[A, B], Awaitable[T]]:
    """``reviewer``, observing in ``histogram`` how long each answer (or failure) took."""

    async def review(review: A, user: B) -> T:
        began = time.perf_counter()
        try:
            return await reviewer(review, user)
        finally:
            histogram.observe(time.perf_counter() - began)

    return review

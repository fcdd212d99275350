"""ResourcePoolStatusRequests at cluster scale: 1,000 and 10,000 pools of 8 GPUs, half allocated.

Measured in-process with the server's own assembly — an SQLite store behind the watch cache,
the device view's service and the pool status service (sources, pool index, controller) —
so a request goes the whole way: created through the registry, seen by the controller's
informer, summarized, its status written through the status subresource (with the
resourceVersion precondition, validated, stored), and seen by a watcher as Complete.

* cold: the first request after start, when every pool's summary has to be computed;
* 20 requests one after the other, each after 1% of the claims changed (deallocated and
  allocated again, so the counts stay put but those pools are summarized anew): time from
  create to Complete, p50 and p99; the requests ask for ``limit: 1000``, the largest status;
* baselines from the same run: listing the same slices and claims from memory (the watch
  cache's list, what a client-side tool would start from, and a plain copy of the informer
  caches), and a from-scratch computation of every pool from the view's devices, the slices
  and the claims without the incremental index;
* the longest stretch the event loop was held while the requests were processed (a 1 ms
  ticker's worst gap).

``python -m bench.poolstatus`` updates only the ``pool-status`` section of RESULTS.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from apiserver.api.resource import DRA_GROUP, dedicated_devices, slice_view
from apiserver.kinds.resourceclaim import ResourceClaimStrategy
from apiserver.kinds.resourcepoolstatusrequest import ResourcePoolStatusRequestStrategy
from apiserver.kinds.resourceslice import ResourceSliceStrategy
from apiserver.machinery import Registry, StatusSubresource, WriteOptions
from apiserver.pools import device_facts, summarize
from apiserver.server.cluster import StandaloneCluster
from apiserver.server.deviceview import DeviceViewOptions, DeviceViewService
from apiserver.server.poolstatus import PoolStatusService
from apiserver.sources import Source, SourceEvent, StoreSource
from apiserver.storage.cacher import WatchCache
from apiserver.storage.sqlite import SQLiteStore
from devtools.waiting import eventually

from . import report

SECTION = "pool-status"
DRIVER = "gpu.example.com"
PER_POOL = 8
REQUESTS = 20
SIZES = (1_000, 10_000)

CREATED = "2026-01-01T00:00:00Z"


def _slice(i: int) -> dict[str, Any]:
    node = f"node-{i:05d}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu", "uid": f"slice-{i}", "creationTimestamp": CREATED},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": [
                {
                    "name": f"gpu-{d}",
                    "attributes": {"index": {"int": d}, "model": {"string": "h100"}},
                    "capacity": {"memory": {"value": "80Gi"}},
                }
                for d in range(PER_POOL)
            ],
        },
    }


def _claim(i: int, allocated: bool = True) -> dict[str, Any]:
    """The claim of pool ``i``: half its GPUs."""
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": f"claim-{i:05d}",
            "namespace": "default",
            "uid": f"claim-{i}",
            "creationTimestamp": CREATED,
        },
        "spec": {
            "devices": {
                "requests": [
                    {"name": "gpus", "exactly": {"deviceClassName": "gpu", "count": PER_POOL // 2}}
                ]
            }
        },
    }
    if allocated:
        results = [
            {"request": "gpus", "driver": DRIVER, "pool": f"node-{i:05d}", "device": f"gpu-{d}"}
            for d in range(PER_POOL // 2)
        ]
        obj["status"] = {"allocation": {"devices": {"results": results}}}
    return obj


class _Ticker:
    """The worst gap between 1 ms ticks of the event loop while it runs."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _Ticker:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.001)  # the probe: how late a 1 ms timer fires is the gap
            now = time.perf_counter()
            self.worst = max(self.worst, now - last - 0.001)
            last = now


class _FullCollections:
    """The longest full (generation 2) collection of the cyclic collector while it is on."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._began = 0.0

    def __enter__(self) -> _FullCollections:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.longest = max(self.longest, time.perf_counter() - self._began)


class _Answers:
    """When each request was seen Complete, from a watcher of its own."""

    def __init__(self, source: StoreSource) -> None:
        self.done: dict[str, float] = {}
        self.statuses: dict[str, dict[str, Any]] = {}
        self._waiters: dict[str, asyncio.Event] = defaultdict(asyncio.Event)
        source.add_handler(self._on_event)

    def _on_event(self, event: SourceEvent) -> None:
        status = event.obj.get("status") or {}
        if status.get("observationTime") and event.key not in self.done:
            self.done[event.key] = time.perf_counter()
            self.statuses[event.key] = status
            self._waiters[event.key].set()

    async def wait(self, name: str) -> float:
        await asyncio.wait_for(self._waiters[name].wait(), 120)
        return self.done[name]


@dataclass
class Size:
    pools: int
    devices: int
    claims: int
    cold: float
    cold_gap: float
    latencies: list[float]
    gap: float
    full_collection: float
    list_store: float
    list_informers: float
    from_scratch: float
    status_bytes: int
    first_pools: list[dict[str, Any]]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q * len(ordered) + 0.5) - 1))
    return ordered[rank]


async def _timed_lists(store: WatchCache, prefixes: list[str]) -> float:
    """The median of 5 rounds of listing every prefix from the watch cache."""
    rounds = []
    for _ in range(5):
        began = time.perf_counter()
        for prefix in prefixes:
            page = await store.list(prefix)
            _ = [item.obj for item in page.items]
        rounds.append(time.perf_counter() - began)
    return statistics.median(rounds)


def _from_scratch(devices: DeviceViewService, claims: Source) -> float:
    """Every pool summarized from the view, the slices and the claims, without the index."""
    began = time.perf_counter()
    slices: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for obj in devices.slices.items():
        facts = slice_view(obj)
        if facts is not None:
            slices[facts.key].append(facts)
    members: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for state in devices.view.devices():
        members[(state.driver, state.pool_name)].append(device_facts(state))
    allocated: dict[tuple[str, str], set[str]] = defaultdict(set)
    for claim in claims.items():
        for device in dedicated_devices(claim):
            allocated[(device.driver, device.pool)].add(device.device)
    summaries = [
        summarize(key[0], key[1], facts, members.get(key, []), allocated.get(key, set()))
        for key, facts in sorted(slices.items())
    ]
    assert len(summaries) == len(slices)
    return time.perf_counter() - began


async def _measure(pools: int, log: Callable[[str], Any]) -> Size:
    with tempfile.TemporaryDirectory() as tmp:
        backend = SQLiteStore(Path(tmp) / "store.db", history=100_000)
        slice_prefix = ResourceSliceStrategy.upstream().resource.key_prefix()
        claim_prefix = ResourceClaimStrategy.upstream().resource.key_prefix()
        request_strategy = ResourcePoolStatusRequestStrategy.for_group(DRA_GROUP)
        request_prefix = request_strategy.resource.key_prefix()
        store = WatchCache(backend, prefixes=[slice_prefix, claim_prefix, request_prefix])
        await store.start()
        slice_keys = ResourceSliceStrategy.upstream().resource
        claim_keys = ResourceClaimStrategy.upstream().resource
        for i in range(pools):
            await backend.create(slice_keys.key(None, f"node-{i:05d}-gpu"), _slice(i))
            await backend.create(claim_keys.key("default", f"claim-{i:05d}"), _claim(i))
        log(f"  {pools:,} pools stored")
        cluster = StandaloneCluster(store, DRA_GROUP, authenticator=None, authorizer=None)
        devices = DeviceViewService(cluster, DRA_GROUP, DeviceViewOptions(patch_status=False))
        service = PoolStatusService(cluster, DRA_GROUP, devices, metrics=CollectorRegistry())
        watcher = StoreSource(store, request_prefix, name="bench-requests")
        answers = _Answers(watcher)
        for part in (cluster, devices, service):
            await part.start()
        await watcher.start()
        await asyncio.wait_for(service.index.wait_synced(), 600)
        await watcher.wait_synced()
        log(f"  view and index synced ({len(devices.view.devices()):,} devices)")
        requests = Registry(request_strategy, store)
        claims = Registry(ResourceClaimStrategy.upstream(), store)

        async def ask(name: str) -> float:
            body = {
                "apiVersion": f"{DRA_GROUP}/v1alpha1",
                "kind": "ResourcePoolStatusRequest",
                "metadata": {"name": name},
                "spec": {"driver": DRIVER, "limit": 1000},
            }
            began = time.perf_counter()
            await requests.create(None, body, WriteOptions())
            return await answers.wait(name) - began

        gc.collect()
        with _FullCollections() as full:
            async with _Ticker() as ticker:
                cold = await ask("cold")
            cold_gap = ticker.worst
            latencies = []
            churn = max(1, pools // 100)
            async with _Ticker() as ticker:
                for r in range(REQUESTS):
                    for j in range(churn):
                        i = (r * churn + j) % pools
                        await _reallocate(claims, i)
                    await _settled(cluster.sources.claims, store)
                    latencies.append(await ask(f"warm-{r}"))
            gap = ticker.worst
        list_store = await _timed_lists(store, [slice_prefix, claim_prefix])
        began = time.perf_counter()
        copies = [devices.slices.items(), cluster.sources.claims.items()]
        list_informers = time.perf_counter() - began
        assert sum(len(c) for c in copies) == 2 * pools
        scratch = statistics.median(
            _from_scratch(devices, cluster.sources.claims) for _ in range(3)
        )
        status = answers.statuses["warm-0"]
        stored = await requests.get(None, "warm-0")
        if status["totalMatchingPools"] != pools:
            raise RuntimeError(f"expected {pools} pools, got {status['totalMatchingPools']}")
        for part in (service, devices, cluster):
            await part.close()
        await watcher.close()
        await store.close()
        return Size(
            pools=pools,
            devices=pools * PER_POOL,
            claims=pools,
            cold=cold,
            cold_gap=cold_gap,
            latencies=latencies,
            gap=gap,
            full_collection=full.longest,
            list_store=list_store,
            list_informers=list_informers,
            from_scratch=scratch,
            status_bytes=len(stored.raw),
            first_pools=status["pools"][:2],
        )


async def _reallocate(claims: Registry, i: int) -> None:
    """Deallocate a claim and allocate it again: two claim events, the same counts."""
    name = f"claim-{i:05d}"
    current = (await claims.get("default", name)).copy()
    allocation = current["status"]["allocation"]
    del current["status"]
    freed = await StatusSubresource(claims).update("default", name, current, WriteOptions())
    again = freed.obj.copy()
    again["status"] = {"allocation": allocation}
    await StatusSubresource(claims).update("default", name, again, WriteOptions())


async def _settled(claims: Source, store: WatchCache) -> None:
    """Until the claim informer has seen the store's latest write (as a user would wait)."""
    target = await store.current_revision()
    await eventually(
        lambda: claims.revision >= target,
        "the claim informer to catch up",
        timeout=120,
        interval=0.001,
    )


@dataclass
class Outcome:
    sizes: list[Size]


async def _run(log: Callable[[str], Any]) -> Outcome:
    sizes = []
    for pools in SIZES:
        log(f"{pools:,} pools:")
        sizes.append(await _measure(pools, log))
        gc.collect()
    return Outcome(sizes)


def run(log: Callable[[str], Any] = print) -> Outcome:
    return asyncio.run(_run(log))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def render(outcome: Outcome, date: str) -> str:
    lines = [
        "## ResourcePoolStatusRequest: create to Complete at 1,000 and 10,000 pools",
        "",
        f"Run: {date}. In-process with the server's assembly (SQLite behind the watch cache,"
        " the device view's service, the pool status service); each pool is one node-local"
        f" ResourceSlice of {PER_POOL} GPUs and one ResourceClaim holding half of them. A request"
        " asks for every pool of the driver with `limit: 1000` (the largest status); its time"
        " runs from the create call to a separate watcher seeing `observationTime`. Before"
        f" each of the {REQUESTS} timed requests 1% of the claims are deallocated and"
        " allocated again, so those pools are summarized anew. Baselines from the same run:"
        " listing the same slices and claims from the watch cache (what a client-side tool"
        " starts from), copying them out of the informer caches, and summarizing every pool"
        " from scratch without the incremental index.",
        "",
        "| pools (devices) | first request (cold) | p50 | p99 | list slices+claims from the"
        " watch cache | p50 / list | copy of the informer caches | all pools from scratch"
        " | longest loop stall | longest full GC |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in outcome.sizes:
        p50, p99 = _pct(s.latencies, 0.5), _pct(s.latencies, 0.99)
        lines.append(
            f"| {s.pools:,} ({s.devices:,}) | {_ms(s.cold)} | {_ms(p50)} | {_ms(p99)}"
            f" | {_ms(s.list_store)} | {p50 / s.list_store:.1f} | {_ms(s.list_informers)}"
            f" | {_ms(s.from_scratch)} | {_ms(max(s.gap, s.cold_gap))}"
            f" | {_ms(s.full_collection)} |"
        )
    big = outcome.sizes[-1]
    stall = max(big.gap, big.cold_gap)
    lines += [
        "",
        f"The KEP's SLO is 99% of requests within 30 s at 1,000+ pools; at {big.pools:,} pools"
        f" p99 is {_ms(_pct(big.latencies, 0.99))}. A request costs a look-up per pool of the"
        " driver in the pool index plus the summaries of the pools that changed since they"
        " were last asked for; the first request after start summarizes every pool (the"
        " from-scratch column is that work done in one go, without the index). Most of a warm"
        " request is writing the status: 1,000 pool entries validated, recorded in"
        f" managedFields and stored ({big.status_bytes:,} bytes as stored), then parsed again"
        " by the watcher. Listing from the watch cache is cheap because it hands out objects"
        " it already holds; the ratio says what answering costs beyond reading the same data.",
        "",
        "Longest loop stall: the worst gap of a 1 ms ticker over the cold and the timed"
        f" requests, churn included (at {big.pools:,} pools {_ms(big.cold_gap)} during the"
        f" cold request, {_ms(big.gap)} during the timed ones). The index yields between"
        " pools every 5 ms while it summarizes; the status write validates its 1,000 entries"
        " in one go. The cyclic garbage collector's longest full collection in the same"
        f" window (last column) was {_ms(big.full_collection)}, "
        + (
            "most of the longest stall"
            if big.full_collection >= stall / 2
            else "less than half of the longest stall: the rest is other work holding the"
            " loop, which this benchmark does not break down"
        )
        + "; the index freezes what start-up made, as the device view does, but claim churn,"
        " parsed statuses and the watch cache's event windows keep adding to what a full"
        " collection walks.",
        "",
        f"Example entry: `{big.first_pools[0]}`.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return report.section_main("bench.poolstatus", __doc__, SECTION, run, render, argv)


if __name__ == "__main__":
    sys.exit(main())

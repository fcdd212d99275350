"""The live pool view at 10,000 pools: what one claim change costs to bring it up to date.

Measured in-process with the server's own assembly — an SQLite store behind the watch cache,
the device view's service, the pool status service (its pool index) and the pool view's
service — on 10,000 pools of 8 GPUs, each with one claim holding half of them. Each timed
change writes a claim's status through the status subresource (deallocating it, then
allocating it again, alternately), and a watcher of the ResourcePool store waits for that
pool's MODIFIED event:

* time from the status write's call to the event, p50 and p99 (the write, the claim
  informer, the index, the view's recomputation and commit);
* CPU per change: the whole process's (``time.process_time``) over the timed changes, and
  the view's own share (its recomputation and commit, from ``LivePools.update_cpu``);
* baselines from the same run: summarizing the one pool from scratch (what a
  ResourcePoolStatusRequest for that pool computes), and summarizing all 10,000 pools from
  scratch (what a view without the incremental index would redo per change).

``python -m bench.poolview`` updates only the ``pool-view`` section of RESULTS.md.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from apiserver.api.resource import DRA_GROUP, slice_view
from apiserver.kinds.resourceclaim import ResourceClaimStrategy
from apiserver.kinds.resourceslice import ResourceSliceStrategy
from apiserver.machinery import Registry, StatusSubresource, WriteOptions
from apiserver.pools import device_facts, summarize
from apiserver.server.cluster import StandaloneCluster
from apiserver.server.deviceview import DeviceViewOptions, DeviceViewService
from apiserver.server.poolstatus import PoolStatusService
from apiserver.server.poolview import PoolViewService
from apiserver.storage import EventType
from apiserver.storage.cacher import WatchCache
from apiserver.storage.sqlite import SQLiteStore
from devtools.waiting import eventually

from . import report
from .poolstatus import DRIVER, PER_POOL, _claim, _from_scratch, _pct, _slice

SECTION = "pool-view"
POOLS = 10_000
CHANGES = 200


@dataclass
class Outcome:
    pools: int
    latencies: list[float]
    cpu_per_change: float
    view_cpu_per_change: float
    one_pool: float
    all_pools: float
    events: int


class _Arrivals:
    """When each pool's next MODIFIED event arrives, from a watch of the view's store."""

    def __init__(self) -> None:
        self.waiting: dict[str, asyncio.Future[float]] = {}
        self.events = 0

    async def follow(self, service: PoolViewService) -> None:
        store = service.pools.store
        prefix = service.strategy.resource.key_prefix()
        async for event in store.watch(prefix, store.revision):
            self.events += 1
            name = event.object.obj["metadata"]["name"]
            future = self.waiting.pop(name, None)
            if future is not None and event.type is EventType.MODIFIED:
                future.set_result(time.perf_counter())

    def expect(self, name: str) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiting[name] = future
        return future


async def _change(claims: Registry, i: int, allocated: bool) -> None:
    """Allocate or deallocate claim ``i`` through the status subresource."""
    name = f"claim-{i:05d}"
    current = (await claims.get("default", name)).copy()
    if allocated:
        current["status"] = _claim(i)["status"]
    else:
        current.pop("status", None)
    await StatusSubresource(claims).update("default", name, current, WriteOptions())


def _one_pool_indexed(devices: DeviceViewService, service: PoolStatusService, pool: str) -> float:
    """One pool summarized, given its slices, devices and allocations already gathered
    (what the index holds, and what a ResourcePoolStatusRequest computes per pool)."""
    views = [v for v in (slice_view(o) for o in devices.slices.items()) if v and v.pool == pool]
    facts = [device_facts(s) for s in devices.view.devices() if s.pool_name == pool]
    held = {f"gpu-{d}" for d in range(PER_POOL // 2)}
    rounds = []
    for _ in range(200):
        began = time.perf_counter()
        summarize(DRIVER, pool, views, facts, held)
        rounds.append(time.perf_counter() - began)
    return statistics.median(rounds)


async def _measure(log: Callable[[str], Any]) -> Outcome:
    with tempfile.TemporaryDirectory() as tmp:
        backend = SQLiteStore(Path(tmp) / "store.db", history=100_000)
        slices = ResourceSliceStrategy.upstream().resource
        claims_resource = ResourceClaimStrategy.upstream().resource
        store = WatchCache(backend, prefixes=[slices.key_prefix(), claims_resource.key_prefix()])
        await store.start()
        for i in range(POOLS):
            await backend.create(slices.key(None, f"node-{i:05d}-gpu"), _slice(i))
            await backend.create(claims_resource.key("default", f"claim-{i:05d}"), _claim(i))
        log(f"  {POOLS:,} pools stored")
        cluster = StandaloneCluster(store, DRA_GROUP, authenticator=None, authorizer=None)
        devices = DeviceViewService(cluster, DRA_GROUP, DeviceViewOptions(patch_status=False))
        service = PoolStatusService(cluster, DRA_GROUP, devices, metrics=CollectorRegistry())
        view = PoolViewService(service.index, DRA_GROUP)
        for part in (cluster, devices, service, view):
            await part.start()
        await asyncio.wait_for(service.index.wait_synced(), 600)
        await eventually(lambda: view.pools.has_synced, "the pool view", timeout=600)
        log(f"  pool view synced ({POOLS:,} pools)")
        arrivals = _Arrivals()
        follower = asyncio.create_task(arrivals.follow(view))
        await asyncio.sleep(0)
        claims = Registry(ResourceClaimStrategy.upstream(), store)
        gc.collect()
        latencies = []
        cpu_began = time.process_time()
        view_began = view.pools.update_cpu
        for n in range(CHANGES):
            i = (n // 2 * 37) % POOLS
            arrived = arrivals.expect(f"{DRIVER}.node-{i:05d}")
            began = time.perf_counter()
            await _change(claims, i, allocated=n % 2 == 1)
            latencies.append(await asyncio.wait_for(arrived, 60) - began)
        cpu = (time.process_time() - cpu_began) / CHANGES
        view_cpu = (view.pools.update_cpu - view_began) / CHANGES
        log(f"  {CHANGES} changes: p50 {_pct(latencies, 0.5) * 1000:.2f} ms")
        one_pool = _one_pool_indexed(devices, service, "node-00000")
        all_pools = statistics.median(
            _from_scratch(devices, cluster.sources.claims) for _ in range(3)
        )
        follower.cancel()
        for part in (view, service, devices, cluster):
            await part.close()
        await store.close()
        return Outcome(
            pools=POOLS,
            latencies=latencies,
            cpu_per_change=cpu,
            view_cpu_per_change=view_cpu,
            one_pool=one_pool,
            all_pools=all_pools,
            events=arrivals.events,
        )


def run(log: Callable[[str], Any] = print) -> Outcome:
    return asyncio.run(_measure(log))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.3f} ms" if seconds < 0.01 else f"{seconds * 1000:,.1f} ms"


def render(outcome: Outcome, date: str) -> str:
    o = outcome
    p50, p99 = _pct(o.latencies, 0.5), _pct(o.latencies, 0.99)
    return "\n".join(
        [
            "## The live pool view: cost per claim change at 10,000 pools",
            "",
            f"Run: {date}. In-process with the server's assembly (SQLite behind the watch"
            " cache, the device view's service, the pool status service and its pool index,"
            f" the pool view's service); {o.pools:,} node-local pools of {PER_POOL} GPUs, each"
            f" with one claim holding half of them. {len(o.latencies)} timed changes, one"
            " after the other: a claim's status written through the status subresource"
            " (deallocated, then allocated again), until a watcher of the ResourcePool store"
            " sees that pool's MODIFIED event with the new counts. Baselines from the same"
            " run: summarizing that one pool (what a ResourcePoolStatusRequest computes per"
            " pool) and summarizing every pool from scratch (what a view without the"
            " incremental index would redo on each change).",
            "",
            "| pools | change to MODIFIED p50 | p99 | CPU per change, whole process | CPU per"
            " change, the view's own | one pool summarized | all pools from scratch |"
            " view CPU / one pool | all pools / view CPU | view CPU / whole change |",
            "|---|---|---|---|---|---|---|---|---|---|",
            f"| {o.pools:,} | {_ms(p50)} | {_ms(p99)} | {_ms(o.cpu_per_change)}"
            f" | {_ms(o.view_cpu_per_change)} | {_ms(o.one_pool)} | {_ms(o.all_pools)}"
            f" | {report.ratio(o.view_cpu_per_change, o.one_pool)}"
            f" | {report.ratio(o.all_pools, o.view_cpu_per_change)}"
            f" | {report.ratio(o.view_cpu_per_change, o.cpu_per_change)} |",
            "",
            "What liveness costs: the view recomputes only the pool a claim names (the index"
            " has its slices, devices and allocations gathered), compares the summary with"
            " the one it published and commits one event; the view's own CPU is that"
            " recomputation plus building and encoding the object for the event. The"
            " whole-process CPU is the rest of the change as well: the status write"
            " (validation, managedFields, SQLite), the watch cache, the claim informer and"
            " the index. The view's CPU is measured with the thread's clock around its rounds,"
            " which here hold one pool each and never yield.",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    return report.section_main("bench.poolview", __doc__, SECTION, run, render, argv)


if __name__ == "__main__":
    sys.exit(main())

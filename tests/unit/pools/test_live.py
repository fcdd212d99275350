"""The live pool view: the counts a ResourcePoolStatusRequest gives, kept current from the
pool index's changes (ADDED, MODIFIED, DELETED), with names that never collide, and equal
to a view built from scratch after any sequence of changes."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from apiserver.api import dns1123_subdomain_errors
from apiserver.api.resource import DRA_GROUP
from apiserver.controllers.poolstatus import request_status
from apiserver.devices import DeviceView
from apiserver.kinds.resourcepool import ResourcePoolStrategy
from apiserver.pools import HeldReservations, LivePools, PoolIndex
from apiserver.pools.names import MAX_NAME, hashed_name, readable_name
from apiserver.sources import MemorySource, RevisionClock
from apiserver.storage import EventType, WatchEvent
from devtools.waiting import eventually
from tests.unit.builders import DRIVER, class_obj, device, reservation_obj, slice_obj

WAIT = 10.0
RESOURCE = ResourcePoolStrategy.for_group(DRA_GROUP).resource
PREFIX = RESOURCE.key_prefix()
COUNTS = ("totalDevices", "allocatedDevices", "availableDevices", "unavailableDevices")


def claim(name: str, *devices: tuple[str, str]) -> dict[str, Any]:
    """A claim allocated the (pool, device) pairs of the default driver."""
    results = [{"request": "r", "driver": DRIVER, "pool": p, "device": d} for p, d in devices]
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {},
    }
    if results:
        obj["status"] = {"allocation": {"devices": {"results": results}}}
    return obj


def partitionable(name: str) -> dict[str, Any]:
    """A GPU and its two halves sharing one counter set: allocating a half uses up the whole."""
    obj = slice_obj(
        name,
        [
            {
                "name": "whole",
                "consumesCounters": [{"counterSet": "mem", "counters": {"m": {"value": "2"}}}],
            },
            {
                "name": "half-0",
                "consumesCounters": [{"counterSet": "mem", "counters": {"m": {"value": "1"}}}],
            },
            {
                "name": "half-1",
                "consumesCounters": [{"counterSet": "mem", "counters": {"m": {"value": "1"}}}],
            },
        ],
    )
    obj["spec"]["sharedCounters"] = [{"name": "mem", "counters": {"m": {"value": "2"}}}]
    return obj


def two_slices(pool: str, count: int) -> list[dict[str, Any]]:
    """A pool published in ``count`` slices of which only the first two exist."""
    out = []
    for i in range(2):
        obj = slice_obj(f"{pool}-{i}", [device(f"d{i}a"), device(f"d{i}b")], pool=pool)
        obj["spec"]["pool"]["resourceSliceCount"] = count
        out.append(obj)
    return out


def tainted(name: str) -> dict[str, Any]:
    obj = slice_obj(name, [device("ok"), device("bad"), device("soft")])
    obj["spec"]["devices"][1]["taints"] = [{"key": "broken", "effect": "NoSchedule"}]
    obj["spec"]["devices"][2]["taints"] = [{"key": "meh", "effect": "None"}]
    return obj


def cluster_slices() -> list[dict[str, Any]]:
    shared = slice_obj("shared", [device("s0"), device("s1")], allNodes=True)
    return [
        slice_obj("n1", [device("g0"), device("g1"), device("g2")]),
        tainted("n2"),
        partitionable("n3"),
        *two_slices("multi", 2),
        *two_slices("partial", 3),
        shared,
    ]


@dataclass
class Live:
    clock: RevisionClock
    slices: MemorySource
    claims: MemorySource
    view: DeviceView
    index: PoolIndex
    pools: LivePools
    reservations: MemorySource

    async def objects(self) -> dict[str, dict[str, Any]]:
        page = await self.pools.store.list(PREFIX)
        return {item.obj["metadata"]["name"]: item.obj for item in page.items}

    async def caught_up(self) -> None:
        """Until the view has processed every change the index has told it about."""
        await asyncio.wait_for(self.index.settle(), WAIT)
        await eventually(lambda: self.pools.idle, "the view", timeout=WAIT)


@pytest.fixture
async def live() -> AsyncIterator[Live]:
    clock = RevisionClock()
    slices = MemorySource("resourceslices", cluster_slices(), clock=clock)
    classes = MemorySource("deviceclasses", [class_obj("gpu")], clock=clock)
    patches = MemorySource("resourceslicepatches", [], clock=clock)
    claims = MemorySource(
        "resourceclaims",
        [claim("c1", ("n1", "g0")), claim("c2", ("n3", "half-0")), claim("c3", ("multi", "d1a"))],
        clock=clock,
    )
    reservations = MemorySource("devicereservations", clock=clock)
    view = DeviceView(slices, classes, patches)
    index = PoolIndex(view, slices, claims, reservations=HeldReservations(reservations))
    pools = LivePools(index, RESOURCE)
    for source in (slices, classes, patches, claims, reservations):
        await source.start()
    await view.start()
    await index.start()
    await pools.start()
    await eventually(lambda: pools.has_synced, "the pool view", timeout=WAIT)
    yield Live(clock, slices, claims, view, index, pools, reservations)
    await pools.close()
    await index.close()
    await view.close()


async def rpsr_entries(index: PoolIndex) -> dict[str, dict[str, Any]]:
    """What a ResourcePoolStatusRequest for the driver reports, by pool name."""
    summaries = await index.summaries(DRIVER)
    status = request_status(summaries, limit=1000, now="2026-01-01T00:00:00Z")
    return {p["poolName"]: p for p in status["pools"]}


def as_entry(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's fields under the names a ResourcePoolStatusRequest's pool entry uses."""
    spec, status = obj["spec"], obj["status"]
    entry = {"driver": spec["driver"], "poolName": spec["poolName"]}
    if "nodeName" in spec:
        entry["nodeName"] = spec["nodeName"]
    entry.update({k: status[k] for k in (*COUNTS, "sliceCount", "generation")})
    return entry


async def test_the_view_counts_what_a_pool_status_request_reports(live: Live) -> None:
    objects = await live.objects()
    expected = await rpsr_entries(live.index)
    assert {o["spec"]["poolName"]: as_entry(o) for o in objects.values()} == expected
    # The set is not trivial: allocations, a NoSchedule taint, counters used up, several
    # slices, a pool still being published.
    by_pool = {o["spec"]["poolName"]: o["status"] for o in objects.values()}
    assert [by_pool["n1"][k] for k in COUNTS] == [3, 1, 2, 0]
    assert [by_pool["n2"][k] for k in COUNTS] == [3, 0, 2, 1]
    assert [by_pool["n3"][k] for k in COUNTS] == [3, 1, 1, 1]
    assert [by_pool["multi"][k] for k in COUNTS] == [4, 1, 3, 0]
    assert by_pool["multi"]["sliceCount"] == 2
    assert by_pool["partial"]["incomplete"] is True
    assert by_pool["partial"]["validationErrors"] == [
        "pool partial: incomplete: 2 of 3 slices of generation 1 are published"
    ]
    shared = objects[f"{DRIVER}.shared"]
    assert shared["spec"] == {"driver": DRIVER, "poolName": "shared", "allNodes": True}
    n1 = objects[f"{DRIVER}.n1"]
    assert n1["apiVersion"] == f"{DRA_GROUP}/v1alpha3"
    assert n1["kind"] == "ResourcePool"
    assert n1["spec"]["nodeName"] == "n1"


async def test_an_allocation_modifies_only_its_pool(live: Live) -> None:
    start = live.pools.store.revision
    watch = live.pools.store.watch(PREFIX, start)
    events = aiter(watch)
    live.claims.put(claim("c4", ("n1", "g1"), ("n1", "g2")))
    event: WatchEvent = await asyncio.wait_for(anext(events), WAIT)
    assert event.type is EventType.MODIFIED
    obj = event.object.obj
    assert obj["metadata"]["name"] == f"{DRIVER}.n1"
    assert [obj["status"][k] for k in COUNTS] == [3, 3, 0, 0]
    assert int(obj["metadata"]["resourceVersion"]) > start
    assert event.prev is not None
    assert event.prev.obj["status"]["allocatedDevices"] == 1
    # Only that pool changed: the next event is the next change's.
    live.claims.remove("default/c1")
    event = await asyncio.wait_for(anext(events), WAIT)
    assert (event.type, event.object.obj["status"]["allocatedDevices"]) == (EventType.MODIFIED, 2)
    assert event.object.obj["metadata"]["name"] == f"{DRIVER}.n1"
    assert await rpsr_entries(live.index) == {
        o["spec"]["poolName"]: as_entry(o) for o in (await live.objects()).values()
    }
    await watch.close()


async def test_reservations_count_as_allocated(live: Live) -> None:
    live.reservations.put(reservation_obj("held", "n2", "ok"))
    await live.caught_up()
    status = (await live.objects())[f"{DRIVER}.n2"]["status"]
    assert (status["allocatedDevices"], status["availableDevices"]) == (1, 1)
    live.reservations.remove("held")
    await live.caught_up()
    assert (await live.objects())[f"{DRIVER}.n2"]["status"]["allocatedDevices"] == 0


async def test_pools_appear_and_vanish(live: Live) -> None:
    watch = live.pools.store.watch(PREFIX, live.pools.store.revision)
    events = aiter(watch)
    live.slices.put(slice_obj("fresh", [device("f0")]))
    added = await asyncio.wait_for(anext(events), WAIT)
    assert (added.type, added.object.obj["metadata"]["name"]) == (
        EventType.ADDED,
        f"{DRIVER}.fresh",
    )
    assert added.object.obj["status"]["totalDevices"] == 1
    live.slices.remove("fresh")
    gone = await asyncio.wait_for(anext(events), WAIT)
    assert (gone.type, gone.object.obj["metadata"]["name"]) == (
        EventType.DELETED,
        f"{DRIVER}.fresh",
    )
    await watch.close()


async def test_a_burst_on_one_pool_is_one_recomputation(live: Live) -> None:
    """Deallocated and allocated again before the view looks: nothing changed, no event."""
    revision = live.pools.store.revision
    recomputed = live.pools.recomputed
    live.claims.remove("default/c1")
    live.claims.put(claim("c1", ("n1", "g0")))
    await live.caught_up()
    assert live.pools.recomputed - recomputed == 1
    assert live.pools.store.revision == revision


async def test_names_shared_by_two_pools_become_hashed(live: Live) -> None:
    """``gpu.example.com`` + ``x.n1``'s readable name is ``gpu.example`` + ``com.x.n1``'s."""
    other = "gpu.example"
    live.slices.put(slice_obj("c", [device("c0")], pool="x.n1"))
    await live.caught_up()
    assert (await live.objects())[f"{DRIVER}.x.n1"]["spec"]["poolName"] == "x.n1"
    live.slices.put(slice_obj("b", [device("b0")], driver=other, pool="com.x.n1"))
    await live.caught_up()
    objects = await live.objects()
    # gpu.example.com + x.n1 and gpu.example + com.x.n1 both read gpu.example.com.x.n1.
    assert readable_name(other, "com.x.n1") == readable_name(DRIVER, "x.n1") == f"{DRIVER}.x.n1"
    assert f"{DRIVER}.x.n1" not in objects
    assert objects[hashed_name(DRIVER, "x.n1")]["spec"]["poolName"] == "x.n1"
    assert objects[hashed_name(other, "com.x.n1")]["spec"]["driver"] == other
    # The other pool goes: the remaining one gets its readable name back.
    live.slices.remove("b")
    await live.caught_up()
    objects = await live.objects()
    assert objects[f"{DRIVER}.x.n1"]["spec"]["poolName"] == "x.n1"
    assert hashed_name(DRIVER, "x.n1") not in objects


def test_names_that_do_not_fit_are_hashed_and_valid() -> None:
    assert readable_name(DRIVER, "rack-1/node-1") is None
    long_pool = ".".join(["p" * 60] * 4)
    assert readable_name(DRIVER, long_pool) is None
    for pool in ("rack-1/node-1", long_pool, "a/b", "a.b"):
        name = hashed_name(DRIVER, pool)
        assert len(name) <= MAX_NAME
        assert dns1123_subdomain_errors(name) == [], name
    assert hashed_name(DRIVER, "a/b") != hashed_name(DRIVER, "a.b")


async def test_incremental_equals_a_view_built_from_scratch(live: Live) -> None:
    """Random slice and claim changes; then a second view over the same index agrees."""
    rng = random.Random(5677)
    pools = ["n1", "n2", "multi", "r1", "r2"]
    for step in range(60):
        what = rng.random()
        pool = rng.choice(pools)
        if what < 0.3:
            count = rng.randint(1, 4)
            live.slices.put(
                slice_obj(f"{pool}-{step % 3}", [device(f"d{i}") for i in range(count)], pool=pool)
            )
        elif what < 0.4:
            live.slices.remove(f"{pool}-{step % 3}")
        elif what < 0.8:
            picked = tuple((pool, f"d{i}") for i in range(rng.randint(0, 2)))
            live.claims.put(claim(f"k{rng.randint(0, 5)}", *picked))
        else:
            live.claims.remove(f"default/k{rng.randint(0, 5)}")
        if step % 7 == 0:
            await live.caught_up()
    await live.caught_up()
    fresh = LivePools(live.index, RESOURCE)
    await fresh.start()
    try:
        await eventually(lambda: fresh.has_synced, "the fresh view", timeout=WAIT)
        page = await fresh.store.list(PREFIX)
        scratch = {i.obj["metadata"]["name"]: i.obj for i in page.items}

        def plain(objects: dict[str, dict[str, Any]]) -> dict[str, Any]:
            return {n: (o["spec"], o["status"], o["metadata"]["uid"]) for n, o in objects.items()}

        assert plain(await live.objects()) == plain(scratch)
        assert {o["spec"]["poolName"]: as_entry(o) for o in scratch.values()} == await rpsr_entries(
            live.index
        )
    finally:
        await fresh.close()

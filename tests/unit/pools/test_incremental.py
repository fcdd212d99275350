"""The pool index's snapshots are built over the last one, pool by pool, and the allocator
keeps each node's free candidates across reviews while the pools they come from keep their
states: over random sequences of slice, allocation, share-less claim and reservation
changes, each snapshot equals one built from the raw objects, unchanged pools keep their
state objects, and an allocator on the incremental snapshot with caches kept across the
whole sequence answers exactly as a fresh one on the scratch snapshot."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from apiserver.allocator import Allocator, SharedCaches, parse_claim
from apiserver.api.resource import DeviceID
from apiserver.devices import DeviceView
from apiserver.pools import HeldReservations, Node, PoolIndex, Pools
from apiserver.sources import MemorySource, RevisionClock
from tests.unit.allocator.check import answer
from tests.unit.builders import DRIVER, class_obj, device, pools_of, reservation_obj, slice_obj

WAIT = 10.0
NODES = [f"n{i}" for i in range(5)]


def _class(version: str, *selectors: str) -> dict[str, Any]:
    made = class_obj("gpu", *selectors)
    made["metadata"]["resourceVersion"] = version  # a changed class has a new version
    return made


GPU = {"gpu": _class("1")}
BIG = {"gpu": _class("2", f"device.attributes['{DRIVER}'].mem >= 16")}


def _slice(node: str, version: int, rng: random.Random) -> dict[str, Any]:
    count = rng.choice([3, 4, 6])
    devices = [device(f"d{i}", mem=rng.choice([8, 16, 32])) for i in range(count)]
    return slice_obj(node, devices, generation=version)


def _fabric(version: int) -> dict[str, Any]:
    devices = [device(f"f{i}", mem=64) for i in range(3)]
    return slice_obj("fabric", devices, generation=version, allNodes=True)


def _claim(name: str, pool: str, *devices: str) -> dict[str, Any]:
    results = [{"request": "r", "driver": DRIVER, "pool": pool, "device": d} for d in devices]
    return {
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {},
        "status": {"allocation": {"devices": {"results": results}}},
    }


def _wanting(count: int) -> Any:
    request = {"deviceClassName": "gpu", "count": count}
    return parse_claim(
        "default/want", {"devices": {"requests": [{"name": "r", "exactly": request}]}}
    )


def _scratch(slices: MemorySource, claims: MemorySource, reservations: HeldReservations) -> Pools:
    return pools_of(*slices.items(), claims=claims.items(), reserved=reservations.held())


def _facts(pools: Pools) -> dict[Any, Any]:
    return {
        key: (sorted(s.gathered.devices), s.allocated, s.reserved, dict(s.shared))
        for key, s in pools.states.items()
    }


def _device_names(slices: MemorySource, pool: str) -> list[str]:
    found = slices.get(pool)
    return [d["name"] for d in found["spec"]["devices"]] if found is not None else []


async def _run(seed: int) -> tuple[int, int]:
    rng = random.Random(seed)
    clock = RevisionClock()
    versions = dict.fromkeys(NODES, 1)
    slices = MemorySource(
        "resourceslices", [*(_slice(n, 1, rng) for n in NODES), _fabric(1)], clock=clock
    )
    classes = MemorySource("deviceclasses", [class_obj("gpu")], clock=clock)
    patches = MemorySource("resourceslicepatches", clock=clock)
    claims = MemorySource("resourceclaims", clock=clock)
    stored = MemorySource("devicereservations", clock=clock)
    reservations = HeldReservations(stored)
    view = DeviceView(slices, classes, patches)
    index = PoolIndex(view, slices, claims, reservations=reservations)
    sources = (slices, classes, patches, claims, stored)
    for source in sources:
        await source.start()
    await view.start()
    await index.start()
    kept = compared = 0
    shared: SharedCaches | None = None
    try:
        await asyncio.wait_for(index.wait_synced(), WAIT)
        last: Pools | None = None
        for step in range(60):
            roll = rng.random()
            pool = rng.choice([*NODES, "fabric"])
            names = _device_names(slices, pool)
            if roll < 0.1 and pool != "fabric":
                versions[pool] += 1
                slices.put(_slice(pool, versions[pool], rng))
            elif roll < 0.55 and names:
                picked = rng.sample(names, rng.choice([1, 2]) if len(names) > 1 else 1)
                claims.put(_claim(f"c{step}", pool, *picked))
            elif roll < 0.7 and claims.items():
                claims.remove(f"default/{rng.choice(claims.items())['metadata']['name']}")
            elif roll < 0.85 and names:
                stored.put(reservation_obj(f"r{step}", pool, rng.choice(names)))
            elif stored.items():
                stored.remove(rng.choice(stored.items())["metadata"]["name"])
            await asyncio.wait_for(index.settle(), WAIT)

            snapshot = index.snapshot()
            scratch = _scratch(slices, claims, reservations)
            assert _facts(snapshot) == _facts(scratch)
            if last is not None:
                # A pool nobody touched keeps its state object: the caches key on it.
                kept += sum(1 for key, s in snapshot.states.items() if last.states.get(key) is s)
            last = snapshot

            table = BIG if step % 7 == 6 else GPU
            shared = SharedCaches.for_inputs(shared, snapshot, table)
            reserved = (
                {DeviceID(DRIVER, pool, rng.choice(names))}
                if names and rng.random() < 0.2
                else set()
            )
            incremental = Allocator(snapshot, table, reserved=reserved)
            shared.attach(incremental)
            fresh = Allocator(scratch, table, reserved=reserved)
            for node in (Node(n) for n in NODES):
                for count in (1, 3):
                    claim = [_wanting(count)]
                    assert answer(incremental.allocate(claim, node)) == answer(
                        fresh.allocate(claim, node)
                    ), (seed, step, node.name, count)
                    compared += 1
    finally:
        await index.close()
        await view.close()
        for source in sources:
            await source.close()
    return kept, compared


@pytest.mark.parametrize("seed", range(5))
async def test_incremental_snapshots_and_free_candidates_equal_a_scratch_build(seed: int) -> None:
    kept, compared = await _run(seed)
    assert kept > 0  # snapshots did reuse the states of untouched pools
    assert compared == 60 * len(NODES) * 2

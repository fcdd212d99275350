"""The pool index hands the allocator the pools pool status counts: patched devices,
allocations from claims, and the devices DeviceReservations hold (until they lapse)."""

from __future__ import annotations

import asyncio
from typing import Any

from apiserver.allocator import Allocator, parse_claim
from apiserver.api.resource import DeviceID
from apiserver.devices import DeviceView
from apiserver.pools import HeldReservations, Node, PoolIndex
from apiserver.sources import MemorySource, RevisionClock
from tests.unit.builders import DRIVER, class_obj, device, patch_obj, reservation_obj, slice_obj

WAIT = 10.0


def claim(name: str, *devices: str) -> dict[str, Any]:
    results = [{"request": "r", "driver": DRIVER, "pool": "n1", "device": d} for d in devices]
    return {
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {},
        "status": {"allocation": {"devices": {"results": results}}},
    }


def wanting(model: str) -> Any:
    selector = {"cel": {"expression": f"device.attributes['{DRIVER}'].model == '{model}'"}}
    request = {"deviceClassName": "gpu", "selectors": [selector]}
    return parse_claim(
        "default/want", {"devices": {"requests": [{"name": "r", "exactly": request}]}}
    )


async def test_allocator_and_pool_status_read_the_same_pools() -> None:
    clock = RevisionClock()
    slices = MemorySource(
        "resourceslices",
        [
            slice_obj(
                "n1",
                [
                    device("g0", model="a100"),
                    device("g1", model="a100"),
                    device("g2", model="a100"),
                ],
            )
        ],
        clock=clock,
    )
    classes = MemorySource("deviceclasses", [class_obj("gpu")], clock=clock)
    patches = MemorySource(
        "resourceslicepatches",
        [patch_obj("h100", device="g2", attributes={f"{DRIVER}/model": {"string": "h100"}})],
        clock=clock,
    )
    claims = MemorySource("resourceclaims", [claim("one", "g0")], clock=clock)
    reservations = MemorySource("devicereservations", clock=clock)
    view = DeviceView(slices, classes, patches)
    index = PoolIndex(view, slices, claims, reservations=HeldReservations(reservations))
    for source in (slices, classes, patches, claims, reservations):
        await source.start()
    await view.start()
    await index.start()
    try:
        await asyncio.wait_for(index.wait_synced(), WAIT)
        await asyncio.wait_for(index.settle(), WAIT)
        node = Node("n1")
        gpu = {"gpu": class_obj("gpu")}

        summary = index.summary(DRIVER, "n1")
        assert summary is not None
        assert (summary.total, summary.allocated, summary.available) == (3, 1, 2)
        # The patched attribute is what the allocator sees: only g2 is an h100 now.
        found = Allocator(index.snapshot(), gpu).allocate([wanting("h100")], node)
        assert found.feasible
        assert found.devices == (DeviceID(DRIVER, "n1", "g2"),)

        reservations.put(reservation_obj("held", "n1", "g2"))
        summary = index.summary(DRIVER, "n1")
        assert summary is not None
        assert (summary.allocated, summary.available) == (2, 1)
        refused = Allocator(index.snapshot(), gpu).allocate([wanting("h100")], node)
        assert not refused.feasible
        assert "reserved 1" in refused.reasons[0]
        free = Allocator(index.snapshot(), gpu).allocate([wanting("a100")], node)
        assert free.devices == (DeviceID(DRIVER, "n1", "g1"),)

        reservations.remove("held")
        summary = index.summary(DRIVER, "n1")
        assert summary is not None
        assert summary.available == 2
        assert Allocator(index.snapshot(), gpu).allocate([wanting("h100")], node).feasible

        # A reservation past its expiration holds nothing, deleted or not.
        reservations.put(reservation_obj("old", "n1", "g2", expires="2020-01-01T00:00:00Z"))
        summary = index.summary(DRIVER, "n1")
        assert summary is not None
        assert summary.available == 2
        assert Allocator(index.snapshot(), gpu).allocate([wanting("h100")], node).feasible
    finally:
        await index.close()
        await view.close()
        for source in (slices, classes, patches, claims, reservations):
            await source.close()


def share(name: str, device_name: str, bandwidth: str) -> dict[str, Any]:
    result = {
        "request": "r",
        "driver": DRIVER,
        "pool": "n1",
        "device": device_name,
        "shareID": f"00000000-0000-4000-8000-{len(name):012d}",
        "consumedCapacity": {"bandwidth": bandwidth},
    }
    return {
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {},
        "status": {"allocation": {"devices": {"results": [result]}}},
    }


async def test_shares_of_a_device_are_summed_counted_once_and_given_back() -> None:
    """Claims holding shares of a multi-allocatable device: pool status counts the device
    once, as allocated; the snapshot sums what the shares consume, so the allocator sees
    what is left; a deleted claim gives its share back."""
    nic = {
        "name": "nic",
        "allowMultipleAllocations": True,
        "capacity": {"bandwidth": {"value": "10Gi"}},
    }
    clock = RevisionClock()
    slices = MemorySource("resourceslices", [slice_obj("n1", [nic, device("g0")])], clock=clock)
    classes = MemorySource("deviceclasses", [class_obj("gpu")], clock=clock)
    patches = MemorySource("resourceslicepatches", [], clock=clock)
    claims = MemorySource(
        "resourceclaims", [share("a", "nic", "4Gi"), share("bb", "nic", "5Gi")], clock=clock
    )
    view = DeviceView(slices, classes, patches)
    index = PoolIndex(view, slices, claims)
    for source in (slices, classes, patches, claims):
        await source.start()
    await view.start()
    await index.start()
    try:
        await asyncio.wait_for(index.wait_synced(), WAIT)
        await asyncio.wait_for(index.settle(), WAIT)
        summary = index.summary(DRIVER, "n1")
        assert summary is not None
        assert (summary.total, summary.allocated, summary.available) == (2, 1, 1)
        state = index.snapshot().states[(DRIVER, "n1")]
        assert state.shared["nic"]["bandwidth"] == 9 * 2**30 * 10**9
        assert "nic" not in state.allocated

        claims.remove("default/a")
        state = index.snapshot().states[(DRIVER, "n1")]
        assert state.shared["nic"]["bandwidth"] == 5 * 2**30 * 10**9
        claims.remove("default/bb")
        assert index.snapshot().states[(DRIVER, "n1")].shared == {}
        summary = index.summary(DRIVER, "n1")
        assert summary is not None
        assert (summary.allocated, summary.available) == (0, 2)
    finally:
        await index.close()
        await view.close()
        for source in (slices, classes, patches, claims):
            await source.close()

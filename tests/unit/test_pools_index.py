"""The pool index hands the allocator the pools pool status counts: patched devices,
allocations from claims, and the devices DeviceReservations hold (until they lapse)."""

from __future__ import annotations

import asyncio
from typing import Any

from apiserver.allocator import Allocator, parse_claim
from apiserver.api.resource.views import DeviceID
from apiserver.devices import DeviceView
from apiserver.pools import HeldReservations, Node, PoolIndex
from apiserver.sources import MemorySource, RevisionClock

from .deviceobjects import DRIVER, class_obj, device, patch_obj, reservation_obj, slice_obj

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

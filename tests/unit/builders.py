"""What the unit tests build: devices, slices, patches, classes, claims and reservations as raw
JSON, the allocator's pools over raw slices and its parsed claims, and a device view over
in-memory sources. One builder a shape, so a test names only what it cares about."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from apiserver.allocator import Claim, parse_claim
from apiserver.api.resource import DeviceID
from apiserver.devices import DeviceView, unpatched_states
from apiserver.pools import Pools, pools_from
from apiserver.sources import MemorySource, RevisionClock

DRIVER = "gpu.example.com"
OLD = "2026-01-01T00:00:00Z"
NEW = "2026-01-02T00:00:00Z"
PLACEMENTS = ("nodeName", "allNodes", "nodeSelector", "perDeviceNodeSelection")
"""The fields that say which nodes a slice's devices reach (exactly one is set)."""


def attrs(**values: Any) -> dict[str, Any]:
    """Attributes from Python values: str -> string, bool -> bool, int -> int."""
    out = {}
    for name, value in values.items():
        kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "string"
        out[name] = {kind: value}
    return out


def device(name: str, capacity: dict[str, str] | None = None, **values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if values:
        out["attributes"] = attrs(**values)
    if capacity:
        out["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    return out


def slice_obj(
    name: str,
    devices: list[dict[str, Any]] | None = None,
    *,
    driver: str = DRIVER,
    pool: str | None = None,
    node: str | None = None,
    generation: int = 1,
    count: int = 1,
    **spec: Any,
) -> dict[str, Any]:
    """A ResourceSlice of ``pool`` (by default named as the slice) at ``generation``, one of
    ``count``; on node ``node`` (by default the pool's name) unless ``spec`` places it; no
    ``devices`` field when ``devices`` is None (a slice of counters only)."""
    pool = pool or name
    body: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        **spec,
    }
    if devices is not None:
        body["devices"] = devices
    if not any(k in spec for k in PLACEMENTS):
        body["nodeName"] = node or pool
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": OLD},
        "spec": body,
    }


def patch_obj(
    name: str,
    *,
    priority: int | None = None,
    created: str = OLD,
    generation: int = 1,
    driver: str | None = None,
    pool: str | None = None,
    device: str | None = None,
    class_name: str | None = None,
    selectors: Iterable[str] = (),
    attributes: dict[str, Any] | None = None,
    capacity: dict[str, Any] | None = None,
    taints: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    flt: dict[str, Any] = {}
    for key, value in (
        ("driver", driver),
        ("pool", pool),
        ("device", device),
        ("deviceClassName", class_name),
    ):
        if value is not None:
            flt[key] = value
    if selectors:
        flt["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    devices: dict[str, Any] = {}
    if flt:
        devices["filter"] = flt
    if priority is not None:
        devices["priority"] = priority
    if attributes is not None:
        devices["attributes"] = attributes
    if capacity is not None:
        devices["capacity"] = capacity
    if taints is not None:
        devices["taints"] = taints
    return {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourceSlicePatch",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "generation": generation,
            "creationTimestamp": created,
        },
        "spec": {"devices": devices},
    }


def rsp_body(name: str, priority: int = 1, **meta: Any) -> dict[str, Any]:
    """A ResourceSlicePatch as a client sends it: ``priority`` and the given metadata."""
    return {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourceSlicePatch",
        "metadata": {"name": name, **meta},
        "spec": {"devices": {"priority": priority}},
    }


def reservation_obj(
    name: str, pool: str, *devices: str, expires: str = "2099-01-01T00:00:00Z"
) -> dict[str, Any]:
    """A stored DeviceReservation holding ``devices`` of ``pool`` until ``expires``."""
    return {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "DeviceReservation",
        "metadata": {"name": name},
        "spec": {
            "nodeName": pool,
            "devices": [{"driver": DRIVER, "pool": pool, "device": d} for d in devices],
            "claims": [{"namespace": "default", "name": name}],
            "expirationTime": expires,
        },
    }


def class_obj(name: str, *selectors: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {"selectors": [{"cel": {"expression": e}} for e in selectors]},
    }


def pools_of(
    *slices: dict[str, Any],
    claims: Iterable[dict[str, Any]] = (),
    reserved: Iterable[DeviceID] = (),
) -> Pools:
    """The allocator's pools over raw slices, their devices as the view has them unpatched."""
    states = [s for obj in slices for s in unpatched_states(obj)]
    return pools_from(slices, states, claims, reserved)


def wanting(
    count: int = 1,
    expression: str | None = None,
    *,
    device_class: str = "dev",
    selector: str | None = None,
    name: str = "default/c",
    **devices: Any,
) -> Claim:
    """A parsed claim with one request ``r`` for ``count`` devices of ``device_class``: a
    ``selector`` on the request, a CEL constraint ``expression`` over the devices, and any
    further ``spec.devices`` fields."""
    request: dict[str, Any] = {"deviceClassName": device_class, "count": count}
    if selector is not None:
        request["selectors"] = [{"cel": {"expression": selector}}]
    body: dict[str, Any] = {"requests": [{"name": "r", "exactly": request}], **devices}
    if expression is not None:
        body["constraints"] = [{"cel": {"expression": expression}}]
    return parse_claim(name, {"devices": body})


NULL = {"null": {}}


@dataclass
class Setup:
    view: DeviceView
    slices: MemorySource
    classes: MemorySource
    patches: MemorySource

    async def settle(self) -> None:
        await self.view.wait_idle()

    def device(self, name: str) -> dict[str, Any]:
        state = self.view.device(name)
        assert state is not None, f"no device {name}"
        return state.device

    async def close(self) -> None:
        await self.view.close()
        for source in (self.slices, self.classes, self.patches):
            await source.close()


async def start_view(
    slices: Iterable[dict[str, Any]] = (),
    classes: Iterable[dict[str, Any]] = (),
    patches: Iterable[dict[str, Any]] = (),
    *,
    budget: float = 0.01,
) -> Setup:
    """A started, synced view over in-memory sources holding these objects."""
    clock = RevisionClock()
    setup = Setup(
        DeviceView(
            slice_source := MemorySource("resourceslices", slices, clock=clock),
            class_source := MemorySource("deviceclasses", classes, clock=clock),
            patch_source := MemorySource("resourceslicepatches", patches, clock=clock),
            budget=budget,
        ),
        slice_source,
        class_source,
        patch_source,
    )
    for source in (slice_source, class_source, patch_source):
        await source.start()
    await setup.view.start()
    await setup.settle()
    return setup

"""Small typed, read-only views over raw ResourceSlice and ResourceClaim JSON.

Objects read from a source stay raw JSON (unknown fields survive); the few fields the device
view, the pools and the allocator read are parsed here, once, into frozen views:

* ``Placement``: where a slice (or, with ``perDeviceNodeSelection``, one device) is usable:
  ``nodeName``, ``nodeSelector``, ``allNodes`` or per device;
* ``SliceView``: a slice's name, driver, pool, generation, ``resourceSliceCount``,
  placement, device count and counter sets (mixins applied);
* ``DeviceID``: ``driver/pool/device``;
* ``AllocatedDevice``: one result of a claim's allocation, with its admin-access flag, its
  ``shareID`` and the capacity it consumes (``claim_results``); ``dedicated_devices`` are
  those that take the whole device from others, ``shared_devices`` the shares of devices that
  allow multiple allocations (a result with a ``shareID``), with what each consumes.

Malformed input never raises here: validation rejects it on write, and a value that cannot
be read is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from ...cel.quantity import QuantityError, parse
from ...toolkit import JSON
from .mixins import flatten_slice

NODE_NAME, NODE_SELECTOR, ALL_NODES = "nodeName", "nodeSelector", "allNodes"
PER_DEVICE = "perDeviceNodeSelection"
DEVICE_PLACEMENTS = (NODE_NAME, NODE_SELECTOR, ALL_NODES)
"""The placement fields a device may carry (in a slice with ``perDeviceNodeSelection``)."""
SLICE_PLACEMENTS = (*DEVICE_PLACEMENTS, PER_DEVICE)

Counters = tuple[tuple[str, int], ...]
"""(counter name, amount in nano units), sorted by name."""


def as_dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(frozen=True, slots=True)
class Placement:
    """Which placement field is set (``kind``, "" for none) and its value."""

    kind: str
    node_name: str | None = None
    node_selector: JSON | None = None

    @property
    def fields(self) -> JSON:
        """The placement as the JSON fields it came from (what a Device object shows)."""
        if self.kind == NODE_NAME:
            return {NODE_NAME: self.node_name}
        if self.kind == NODE_SELECTOR:
            return {NODE_SELECTOR: self.node_selector}
        if self.kind == ALL_NODES:
            return {ALL_NODES: True}
        return {}

    @property
    def per_device(self) -> bool:
        return self.kind == PER_DEVICE


NOWHERE = Placement("")


def placement(obj: JSON, kinds: tuple[str, ...] = SLICE_PLACEMENTS) -> Placement:
    """The placement of a slice spec (or of a device, with ``DEVICE_PLACEMENTS``)."""
    for kind in kinds:
        value = obj.get(kind)
        if value is None or value is False:
            continue
        if kind == NODE_NAME:
            return Placement(kind, node_name=value if isinstance(value, str) else None)
        if kind == NODE_SELECTOR:
            return Placement(kind, node_selector=as_dict(value))
        return Placement(kind)
    return NOWHERE


def device_placement(device: JSON) -> Placement:
    return placement(device, DEVICE_PLACEMENTS)


def placement_text(fields: JSON) -> str:
    """Where a device or pool is, for a NODE column: the node's name, ``<all>``,
    ``<selector>``, ``<per-device>``, or empty."""
    if fields.get(PER_DEVICE) is True:
        return "<per-device>"
    place = device_placement(fields)
    if place.kind == NODE_NAME:
        return place.node_name or ""
    return {ALL_NODES: "<all>", NODE_SELECTOR: "<selector>"}.get(place.kind, "")


def counters(raw: Any) -> Counters:
    """A ``counters`` map ({name: {value: quantity}}) in nano units, sorted by name."""
    out = []
    for name, counter in as_dict(raw).items():
        value = as_dict(counter).get("value")
        try:
            out.append((str(name), parse(str(value)).nanos))
        except QuantityError:
            continue  # validation rejects it; a counter that cannot be read is left out
    return tuple(sorted(out))


def consumed_counters(device: JSON) -> tuple[tuple[str, Counters], ...]:
    """(counter set, counters) a flattened device consumes."""
    return tuple(
        (str(c.get("counterSet", "")), counters(c.get("counters")))
        for c in device.get("consumesCounters") or ()
        if isinstance(c, dict)
    )


@dataclass(frozen=True, slots=True)
class SliceView:
    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    """The slice's ``pool.resourceSliceCount``."""
    placement: Placement
    devices: int
    """Device entries in the slice (a slice may only hold counter sets)."""
    counter_sets: tuple[tuple[str, Counters], ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.driver, self.pool)

    @property
    def node_name(self) -> str | None:
        return self.placement.node_name


def slice_view(obj: JSON) -> SliceView | None:
    """The view of a ResourceSlice; None if it names no driver or pool."""
    spec = as_dict(obj.get("spec"))
    pool = as_dict(spec.get("pool"))
    driver, pool_name = spec.get("driver"), pool.get("name")
    if not isinstance(driver, str) or not isinstance(pool_name, str):
        return None
    sets: tuple[tuple[str, Counters], ...] = ()
    if spec.get("sharedCounters"):
        mixins = as_dict(spec.get("mixins"))
        flat = flatten_slice(
            {
                "sharedCounters": spec["sharedCounters"],
                "mixins": {"counterSet": mixins.get("counterSet")},
            }
        )
        sets = tuple(
            (str(s.get("name", "")), counters(s.get("counters")))
            for s in flat["sharedCounters"]
            if isinstance(s, dict)
        )
    devices = spec.get("devices")
    return SliceView(
        name=str(as_dict(obj.get("metadata")).get("name", "")),
        driver=driver,
        pool=pool_name,
        generation=as_int(pool.get("generation")),
        slice_count=as_int(pool.get("resourceSliceCount")),
        placement=placement(spec),
        devices=len(devices) if isinstance(devices, list) else 0,
        counter_sets=sets,
    )


class DeviceID(NamedTuple):
    """A tuple, so that hashing it (in every set look-up of the search) runs in C."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    id: DeviceID
    request: str
    admin_access: bool
    share_id: str | None = None
    consumed: tuple[tuple[str, int], ...] = ()
    """``consumedCapacity`` in nano units, sorted by name."""

    @property
    def shared(self) -> bool:
        return self.share_id is not None


def claim_results(claim: JSON) -> tuple[AllocatedDevice, ...]:
    """Every result of a claim's ``status.allocation.devices.results``."""
    allocation = as_dict(claim.get("status")).get("allocation")
    if not isinstance(allocation, dict):
        return ()
    out = []
    for result in as_dict(allocation.get("devices")).get("results") or ():
        if not isinstance(result, dict):
            continue
        driver, pool, device = result.get("driver"), result.get("pool"), result.get("device")
        if isinstance(driver, str) and isinstance(pool, str) and isinstance(device, str):
            share = result.get("shareID")
            out.append(
                AllocatedDevice(
                    DeviceID(driver, pool, device),
                    str(result.get("request", "")),
                    bool(result.get("adminAccess")),
                    share if isinstance(share, str) and share else None,
                    counters(
                        {
                            k: {"value": v}
                            for k, v in as_dict(result.get("consumedCapacity")).items()
                        }
                    ),
                )
            )
    return tuple(out)


def dedicated_devices(claim: JSON) -> tuple[DeviceID, ...]:
    """The devices a claim's allocation takes whole from others: admin-access results and
    shares of multi-allocatable devices excepted, as upstream."""
    return tuple(r.id for r in claim_results(claim) if not r.admin_access and not r.shared)


def shared_devices(claim: JSON) -> tuple[tuple[DeviceID, tuple[tuple[str, int], ...]], ...]:
    """The shares a claim's allocation holds of devices that allow multiple allocations, each
    with the capacity it consumes (admin-access results excepted, as upstream)."""
    return tuple(
        (r.id, r.consumed) for r in claim_results(claim) if r.shared and not r.admin_access
    )

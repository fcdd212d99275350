"""What one pool offers: the pure computation behind a ResourcePoolStatusRequest (KEP-5677).

Inputs are small facts, extracted once per change: ``SliceFacts`` from a ResourceSlice (its
pool generation, resourceSliceCount, node placement, counter sets with mixins applied),
``DeviceFacts`` from a device as the device view publishes it (flattened, KEP-5027 patches
applied: its taints and the counters it consumes), and the names of the pool's allocated
devices. ``summarize`` turns them into a ``PoolSummary``:

* only the newest generation counts: slices of an older generation are ignored (not an
  error), as the scheduler's allocator does while a driver replaces them;
* ``totalDevices``: distinct device names in the newest generation's slices;
* ``allocatedDevices``: those named by a ResourceClaim's ``status.allocation.devices.results``
  (admin-access results excepted, as upstream); a shared device counts once;
* ``unavailableDevices``: devices not allocated that cannot be allocated now — a taint with
  effect ``NoSchedule`` or ``NoExecute`` (``None`` and unknown effects do not count, as
  upstream), or a counter the device consumes that the allocated devices of the pool have
  already used up (partitionable devices: a whole GPU once a half is allocated, and the
  halves once the whole is), or a counter set or counter the pool does not define;
* ``availableDevices`` = total - allocated - unavailable;
* ``nodeName``: the node when every placement in the pool names the same node.

Problems become validation errors (at most 256 characters each) and never stop the count:
fewer slices than ``resourceSliceCount`` (the pool is incomplete: the counts cover the
slices present), more slices than that, slices that disagree on ``resourceSliceCount``,
slices on different nodes (or node-local mixed with ``allNodes``/``nodeSelector``), device
names that appear in several slices (each name counts once, the first slice by name wins),
counter sets defined twice, and references to counter sets or counters that do not exist.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..api.resource.mixins import flatten_slice
from ..api.resource.resourcepoolstatusrequest import VALIDATION_ERROR_MAX_LENGTH
from ..cel.quantity import QuantityError, parse
from ..devices import DeviceState

JSON = dict[str, Any]
PoolKey = tuple[str, str]
"""(driver, pool name): pool names are unique per driver."""

Counters = tuple[tuple[str, int], ...]
"""(counter name, amount in nano units), sorted by name."""

BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
NODE_NAME, PER_DEVICE = "nodeName", "perDeviceNodeSelection"
_PLACEMENTS = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
_NAMES_SHOWN = 3


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _counters(counters: Any) -> Counters:
    out = []
    for name, counter in _dict(counters).items():
        value = _dict(counter).get("value")
        try:
            out.append((str(name), parse(str(value)).nanos))
        except QuantityError:
            continue  # validation rejects it; a counter that cannot be read is left out
    return tuple(sorted(out))


@dataclass(frozen=True, slots=True)
class SliceFacts:
    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    """The slice's ``pool.resourceSliceCount``."""
    placement: str
    """Which of nodeName, nodeSelector, allNodes, perDeviceNodeSelection the slice sets."""
    node_name: str | None
    devices: int
    """Device entries in the slice (a slice may only hold counter sets)."""
    counter_sets: tuple[tuple[str, Counters], ...] = ()

    @property
    def key(self) -> PoolKey:
        return (self.driver, self.pool)


def slice_facts(obj: JSON) -> SliceFacts | None:
    """The facts of a ResourceSlice; None if it names no driver or pool."""
    spec = _dict(obj.get("spec"))
    pool = _dict(spec.get("pool"))
    driver, pool_name = spec.get("driver"), pool.get("name")
    if not isinstance(driver, str) or not isinstance(pool_name, str):
        return None
    placement = next((k for k in _PLACEMENTS if spec.get(k) not in (None, False)), "")
    node = spec.get("nodeName")
    sets: tuple[tuple[str, Counters], ...] = ()
    if spec.get("sharedCounters"):
        mixins = _dict(spec.get("mixins"))
        flat = flatten_slice(
            {
                "sharedCounters": spec["sharedCounters"],
                "mixins": {"counterSet": mixins.get("counterSet")},
            }
        )
        sets = tuple(
            (str(s.get("name", "")), _counters(s.get("counters")))
            for s in flat["sharedCounters"]
            if isinstance(s, dict)
        )
    devices = spec.get("devices")
    return SliceFacts(
        name=str(_dict(obj.get("metadata")).get("name", "")),
        driver=driver,
        pool=pool_name,
        generation=_int(pool.get("generation")),
        slice_count=_int(pool.get("resourceSliceCount")),
        placement=placement,
        node_name=node if isinstance(node, str) else None,
        devices=len(devices) if isinstance(devices, list) else 0,
        counter_sets=sets,
    )


@dataclass(frozen=True, slots=True)
class DeviceFacts:
    name: str
    slice_name: str
    node_name: str | None
    """The node the device is on, if it names one (its own for per-device placement)."""
    tainted: bool
    """A taint with effect NoSchedule or NoExecute."""
    consumes: tuple[tuple[str, Counters], ...] = ()


def device_facts(state: DeviceState) -> DeviceFacts:
    device = state.device
    tainted = any(
        isinstance(t, dict) and t.get("effect") in BLOCKING_EFFECTS
        for t in device.get("taints") or ()
    )
    consumes = tuple(
        (str(c.get("counterSet", "")), _counters(c.get("counters")))
        for c in device.get("consumesCounters") or ()
        if isinstance(c, dict)
    )
    node = state.nodes.get("nodeName")
    return DeviceFacts(
        name=state.device_name,
        slice_name=state.slice_name,
        node_name=node if isinstance(node, str) else None,
        tainted=tainted,
        consumes=consumes,
    )


@dataclass(frozen=True, slots=True)
class PoolSummary:
    driver: str
    pool: str
    node_name: str | None
    generation: int
    slice_count: int
    total: int
    allocated: int
    unavailable: int
    errors: tuple[str, ...] = ()
    incomplete: bool = False

    @property
    def available(self) -> int:
        return self.total - self.allocated - self.unavailable

    def entry(self) -> JSON:
        """The pool's ``status.pools[]`` entry."""
        out: JSON = {"driver": self.driver, "poolName": self.pool}
        if self.node_name is not None:
            out["nodeName"] = self.node_name
        out.update(
            totalDevices=self.total,
            allocatedDevices=self.allocated,
            availableDevices=self.available,
            unavailableDevices=self.unavailable,
            sliceCount=self.slice_count,
            generation=self.generation,
        )
        return out


def clip(message: str, limit: int = VALIDATION_ERROR_MAX_LENGTH) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


def _some(names: Iterable[str]) -> str:
    listed = sorted(names)
    shown = ", ".join(listed[:_NAMES_SHOWN])
    more = len(listed) - _NAMES_SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def summarize(
    driver: str,
    pool: str,
    slices: Iterable[SliceFacts],
    devices: Iterable[DeviceFacts],
    allocated: Collection[str],
) -> PoolSummary:
    """The pool's counts and problems, from the facts of its slices and devices and the
    names of its allocated devices."""
    every = list(slices)
    generation = max((s.generation for s in every), default=0)
    newest = sorted((s for s in every if s.generation == generation), key=lambda s: s.name)
    problems: list[str] = []
    expected = max((s.slice_count for s in newest), default=0)
    counts = sorted({s.slice_count for s in newest})
    if len(counts) > 1:
        problems.append(
            f"slices of generation {generation} disagree on resourceSliceCount"
            f" ({', '.join(map(str, counts))})"
        )
    incomplete = len(newest) < expected
    if incomplete:
        problems.append(
            f"incomplete: {len(newest)} of {expected} slices of generation {generation}"
            " are published"
        )
    elif len(newest) > expected:
        problems.append(
            f"{len(newest)} slices of generation {generation}, more than its"
            f" resourceSliceCount {expected}"
        )
    names = {s.name for s in newest}
    members = sorted((d for d in devices if d.slice_name in names), key=_device_order)
    node_name, placement_problem = _placement(newest, members)
    if placement_problem:
        problems.append(placement_problem)
    by_name: dict[str, DeviceFacts] = {}
    repeated: set[str] = set()
    for device in members:
        if device.name in by_name:
            repeated.add(device.name)
        else:
            by_name[device.name] = device
    if len(repeated) == 1:
        problems.append(f"device {next(iter(repeated))} appears in multiple slices")
    elif repeated:
        problems.append(
            f"{len(repeated)} device names appear in multiple slices: {_some(repeated)}"
        )
    sets, set_problems = _counter_sets(newest)
    problems += set_problems
    taken = [d for name, d in by_name.items() if name in allocated]
    remaining = {name: dict(counters) for name, counters in sets.items()}
    for device in taken:
        for set_name, counters in device.consumes:
            left = remaining.get(set_name)
            if left is None:
                continue
            for counter, amount in counters:
                if counter in left:
                    left[counter] -= amount
    unavailable = 0
    unknown: dict[str, set[str]] = {}
    for name, device in by_name.items():
        if name in allocated:
            continue
        fits = _fits(device, remaining, unknown)
        if device.tainted or not fits:
            unavailable += 1
    for what, where in sorted(unknown.items()):
        one = len(where) == 1
        problems.append(
            f"device{'' if one else 's'} {_some(where)} consume{'s' if one else ''} {what}"
        )
    return PoolSummary(
        driver=driver,
        pool=pool,
        node_name=node_name,
        generation=generation,
        slice_count=len(newest),
        total=len(by_name),
        allocated=len(taken),
        unavailable=unavailable,
        errors=tuple(clip(f"pool {pool}: {p}") for p in problems),
        incomplete=incomplete,
    )


def _device_order(device: DeviceFacts) -> tuple[str, str]:
    return (device.slice_name, device.name)


def _placement(newest: list[SliceFacts], members: list[DeviceFacts]) -> tuple[str | None, str]:
    """The pool's node, if it has one, and what is inconsistent about where its slices are.

    Slices holding devices are what count (a slice of counter sets only says nothing about
    devices); a per-device slice contributes each device's node. Only slice-level placements
    are checked for consistency: a per-device pool may span nodes on purpose."""
    placed = [s for s in newest if s.devices] or newest
    nodes: set[str | None] = set()
    levels: dict[str, int] = {}
    per_device = {s.name for s in placed if s.placement == PER_DEVICE}
    for s in placed:
        if s.placement == PER_DEVICE:
            continue
        where = f"nodeName {s.node_name}" if s.placement == NODE_NAME else s.placement or "none"
        levels[where] = levels.get(where, 0) + 1
        nodes.add(s.node_name if s.placement == NODE_NAME else None)
    for device in members:
        if device.slice_name in per_device:
            nodes.add(device.node_name)
    node = next(iter(nodes)) if len(nodes) == 1 else None
    if len(levels) < 2:
        return node, ""
    described = ", ".join(
        f"{where} ({count} slice{'s' if count > 1 else ''})"
        for where, count in sorted(levels.items())
    )
    return node, f"slices disagree on node placement: {described}"


def _counter_sets(newest: list[SliceFacts]) -> tuple[dict[str, Mapping[str, int]], list[str]]:
    sets: dict[str, Mapping[str, int]] = {}
    twice: set[str] = set()
    for s in newest:
        for name, counters in s.counter_sets:
            if name in sets:
                twice.add(name)
            else:
                sets[name] = dict(counters)
    problems = []
    if twice:
        sets_named = "counter set" if len(twice) == 1 else "counter sets"
        problems.append(f"{sets_named} {_some(twice)} defined in more than one slice")
    return sets, problems


def _fits(
    device: DeviceFacts, remaining: Mapping[str, Mapping[str, int]], unknown: dict[str, set[str]]
) -> bool:
    """Whether the counters left in the pool cover what the device consumes; references to
    counter sets or counters that do not exist are noted in ``unknown``."""
    fits = True
    for set_name, counters in device.consumes:
        left = remaining.get(set_name)
        if left is None:
            what = f"counter set {set_name}, which the pool does not define"
            unknown.setdefault(what, set()).add(device.name)
            fits = False
            continue
        for counter, amount in counters:
            have = left.get(counter)
            if have is None:
                what = f"counter {counter}, which counter set {set_name} does not define"
                unknown.setdefault(what, set()).add(device.name)
                fits = False
            elif amount > 0 and amount > have:
                fits = False
    return fits

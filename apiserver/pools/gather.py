"""One pool gathered from its slices and devices: the facts pool status and the allocator share.

``gather`` takes the views of a pool's slices and the facts of its devices (from the device
view: flattened, KEP-5027 patches applied) and keeps what counts:

* only the newest generation: slices of an older generation are ignored (not an error), as
  the scheduler's allocator does while a driver replaces them;
* devices by name, the first slice by name winning when a name repeats;
* the counter sets the pool defines.

What is wrong is said in ``problems`` (plain sentences, without the pool's name) and sorted
into two flags the allocator obeys: ``incomplete`` (fewer slices than ``resourceSliceCount``:
the driver is still publishing) and ``invalid`` (slices disagree on ``resourceSliceCount``,
more slices than it says, a device name in several slices, a counter set defined twice, a
device consuming a counter set or counter that does not exist). The allocator never uses an
incomplete or invalid pool; pool status still counts what it can see and reports why.

What is free (``Occupancy``): a device named by an allocation or a reservation is taken; an
untaken device is unavailable when it has a ``NoSchedule``/``NoExecute`` taint or consumes
more of a counter than the taken devices of the pool left; the rest is free. Pool status
counts exactly this; the allocator starts its counters from the same ``remaining``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from ..api.resource import (
    NODE_NAME,
    PER_DEVICE,
    Counters,
    SliceView,
    consumed_counters,
    device_placement,
)
from ..devices import DeviceState

PoolKey = tuple[str, str]
"""(driver, pool name): pool names are unique per driver."""

BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
"""Taint effects that keep a device from being allocated (``None`` and unknown ones do not)."""
_NAMES_SHOWN = 3


@dataclass(frozen=True, slots=True)
class DeviceFacts:
    """A device as pools see it; ``state`` is the device view's state it was made from."""

    name: str
    slice_name: str
    node_name: str | None
    """The node the device is on, if it names one (its own for per-device placement)."""
    tainted: bool
    """A taint with effect NoSchedule or NoExecute."""
    consumes: tuple[tuple[str, Counters], ...] = ()
    state: DeviceState | None = field(default=None, compare=False, repr=False)


def device_facts(state: DeviceState) -> DeviceFacts:
    device = state.device
    tainted = any(
        isinstance(t, dict) and t.get("effect") in BLOCKING_EFFECTS
        for t in device.get("taints") or ()
    )
    return DeviceFacts(
        name=state.device_name,
        slice_name=state.slice_name,
        node_name=device_placement(state.nodes).node_name,
        tainted=tainted,
        consumes=consumed_counters(device),
        state=state,
    )


def some(names: Iterable[str]) -> str:
    listed = sorted(names)
    shown = ", ".join(listed[:_NAMES_SHOWN])
    more = len(listed) - _NAMES_SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


@dataclass(frozen=True)
class GatheredPool:
    driver: str
    pool: str
    generation: int
    slices: tuple[SliceView, ...]
    """The newest generation's slices, sorted by name."""
    devices: Mapping[str, DeviceFacts]
    """By device name, in slice-name then device-name order."""
    counter_sets: Mapping[str, Mapping[str, int]]
    node_name: str | None
    """The node when every placement in the pool names the same node."""
    problems: tuple[str, ...] = ()
    incomplete: bool = False
    invalid: bool = False

    @property
    def key(self) -> PoolKey:
        return (self.driver, self.pool)

    @property
    def usable(self) -> bool:
        return not self.incomplete and not self.invalid

    def remaining(self, taken: Collection[str]) -> dict[str, dict[str, int]]:
        """Per counter set, what the ``taken`` devices leave of each counter (may be < 0)."""
        left = {name: dict(counters) for name, counters in self.counter_sets.items()}
        for name in taken:
            device = self.devices.get(name)
            if device is None:
                continue
            for set_name, amounts in device.consumes:
                counters = left.get(set_name)
                if counters is None:
                    continue
                for counter, amount in amounts:
                    if counter in counters:
                        counters[counter] -= amount
        return left

    def occupancy(self, taken: Collection[str]) -> Occupancy:
        """Which devices are taken, unavailable (and why) and free, given the names of the
        devices allocations and reservations hold."""
        remaining = self.remaining(taken)
        held: list[str] = []
        tainted: list[str] = []
        exhausted: list[str] = []
        free: list[str] = []
        for name, device in self.devices.items():
            if name in taken:
                held.append(name)
            elif device.tainted:
                tainted.append(name)
            elif not fits(device.consumes, remaining):
                exhausted.append(name)
            else:
                free.append(name)
        return Occupancy(tuple(held), tuple(tainted), tuple(exhausted), tuple(free), remaining)


@dataclass(frozen=True)
class Occupancy:
    taken: tuple[str, ...]
    tainted: tuple[str, ...]
    exhausted: tuple[str, ...]
    """Untainted devices whose counters the taken devices used up (or that consume counters
    the pool does not define)."""
    free: tuple[str, ...]
    remaining: Mapping[str, Mapping[str, int]]


def fits(
    consumes: tuple[tuple[str, Counters], ...], remaining: Mapping[str, Mapping[str, int]]
) -> bool:
    """Whether the counters left cover what a device consumes; a counter set or counter the
    pool does not define never fits."""
    for set_name, amounts in consumes:
        left = remaining.get(set_name)
        if left is None:
            return False
        for counter, amount in amounts:
            have = left.get(counter)
            if have is None or (amount > 0 and amount > have):
                return False
    return True


def gather(
    driver: str, pool: str, slices: Iterable[SliceView], devices: Iterable[DeviceFacts]
) -> GatheredPool:
    every = list(slices)
    generation = max((s.generation for s in every), default=0)
    newest = sorted((s for s in every if s.generation == generation), key=lambda s: s.name)
    problems: list[str] = []
    incomplete, invalid = _check_slice_count(newest, generation, problems)
    names = {s.name for s in newest}
    members = sorted((d for d in devices if d.slice_name in names), key=_device_order)
    node_name, placement_problem = _placement(newest, members)
    if placement_problem:
        problems.append(placement_problem)
    by_name, repeated = _devices_by_name(members)
    if len(repeated) == 1:
        problems.append(f"device {next(iter(repeated))} appears in multiple slices")
    elif repeated:
        problems.append(f"{len(repeated)} device names appear in multiple slices: {some(repeated)}")
    sets, twice = _counter_sets(newest)
    if twice:
        sets_named = "counter set" if len(twice) == 1 else "counter sets"
        problems.append(f"{sets_named} {some(twice)} defined in more than one slice")
    unknown = _unknown_counters(by_name.values(), sets)
    for what, where in sorted(unknown.items()):
        one = len(where) == 1
        problems.append(
            f"device{'' if one else 's'} {some(where)} consume{'s' if one else ''} {what}"
        )
    return GatheredPool(
        driver=driver,
        pool=pool,
        generation=generation,
        slices=tuple(newest),
        devices=by_name,
        counter_sets=sets,
        node_name=node_name,
        problems=tuple(problems),
        incomplete=incomplete,
        invalid=invalid or bool(repeated) or bool(twice) or bool(unknown),
    )


def _check_slice_count(
    newest: list[SliceView], generation: int, problems: list[str]
) -> tuple[bool, bool]:
    """Whether the newest generation's slices are incomplete, and whether they are invalid
    (they disagree on resourceSliceCount, or there are more than it says); each finding is
    added to ``problems``."""
    invalid = False
    expected = max((s.slice_count for s in newest), default=0)
    counts = sorted({s.slice_count for s in newest})
    if len(counts) > 1:
        invalid = True
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
        invalid = True
        problems.append(
            f"{len(newest)} slices of generation {generation}, more than its"
            f" resourceSliceCount {expected}"
        )
    return incomplete, invalid


def _devices_by_name(members: list[DeviceFacts]) -> tuple[dict[str, DeviceFacts], set[str]]:
    """The pool's devices by name, the first of each name kept, and the names seen again."""
    by_name: dict[str, DeviceFacts] = {}
    repeated: set[str] = set()
    for device in members:
        if device.name in by_name:
            repeated.add(device.name)
        else:
            by_name[device.name] = device
    return by_name, repeated


def _device_order(device: DeviceFacts) -> tuple[str, str]:
    return (device.slice_name, device.name)


def _placement(newest: list[SliceView], members: list[DeviceFacts]) -> tuple[str | None, str]:
    """The pool's node, if it has one, and what is inconsistent about where its slices are.

    Slices holding devices are what count (a slice of counter sets only says nothing about
    devices); a per-device slice contributes each device's node. Only slice-level placements
    are checked for consistency: a per-device pool may span nodes on purpose."""
    placed = [s for s in newest if s.devices] or newest
    nodes: set[str | None] = set()
    levels: dict[str, int] = {}
    per_device = {s.name for s in placed if s.placement.kind == PER_DEVICE}
    for s in placed:
        kind = s.placement.kind
        if kind == PER_DEVICE:
            continue
        where = f"nodeName {s.node_name}" if kind == NODE_NAME else kind or "none"
        levels[where] = levels.get(where, 0) + 1
        nodes.add(s.node_name if kind == NODE_NAME else None)
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


def _counter_sets(newest: list[SliceView]) -> tuple[dict[str, Mapping[str, int]], set[str]]:
    sets: dict[str, Mapping[str, int]] = {}
    twice: set[str] = set()
    for s in newest:
        for name, counters in s.counter_sets:
            if name in sets:
                twice.add(name)
            else:
                sets[name] = dict(counters)
    return sets, twice


def _unknown_counters(
    devices: Iterable[DeviceFacts], sets: Mapping[str, Mapping[str, int]]
) -> dict[str, set[str]]:
    """What devices consume that the pool does not define, and which devices do."""
    unknown: dict[str, set[str]] = {}
    for device in devices:
        for set_name, amounts in device.consumes:
            counters = sets.get(set_name)
            if counters is None:
                what = f"counter set {set_name}, which the pool does not define"
                unknown.setdefault(what, set()).add(device.name)
                continue
            for counter, _ in amounts:
                if counter not in counters:
                    what = f"counter {counter}, which counter set {set_name} does not define"
                    unknown.setdefault(what, set()).add(device.name)
    return unknown

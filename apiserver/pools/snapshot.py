"""Pools as the allocator reads them: gathered pools, what holds their devices, and which
devices a node reaches.

``PoolState`` is one gathered pool with the names of its devices that allocations
(``allocated``) and reservations (``reserved``) hold whole, and the capacity that shares of
its multi-allocatable devices consume (``shared``, per device name); its ``occupancy`` is the
one the pool status counts (a device with at least one share counts as taken, once). ``Pools`` is every pool, sorted by driver then pool name (upstream's order,
which lets drivers prioritise by naming); ``reachable(node)`` lists the devices usable on a
node with how they reach it, indexed so that node-local devices cost a dictionary look-up
and only slices with ``allNodes``, ``nodeSelector`` or per-device placement are checked per
node. ``pools_from`` builds ``Pools`` from raw objects (tests, benchmarks, tools).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..api.resource import (
    NODE_NAME,
    DeviceID,
    Placement,
    SliceView,
    dedicated_devices,
    device_placement,
    shared_devices,
    slice_view,
)
from ..devices import DeviceState
from ..toolkit import JSON
from .gather import DeviceFacts, GatheredPool, Occupancy, PoolKey, device_facts, gather
from .nodes import Node, reaches


@dataclass(frozen=True)
class PoolState:
    gathered: GatheredPool
    allocated: frozenset[str] = frozenset()
    reserved: frozenset[str] = frozenset()
    shared: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Per device that allocations hold shares of: capacity name -> amount consumed (nano
    units), summed over the shares."""

    @property
    def key(self) -> PoolKey:
        return self.gathered.key

    @functools.cached_property
    def occupancy(self) -> Occupancy:
        return self.gathered.occupancy(self.allocated | self.reserved | self.shared.keys())


@dataclass(frozen=True, slots=True)
class Reach:
    """One device a node reaches: its pool, its facts, and through which placement."""

    pool: PoolState
    device: DeviceFacts
    placement: Placement

    @property
    def local(self) -> bool:
        return self.placement.kind == NODE_NAME


class Pools:
    def __init__(self, states: Iterable[PoolState], previous: Pools | None = None) -> None:
        """``previous``: an earlier snapshot whose reach entries are reused for every pool
        whose gathered slices and devices are the same object (only what holds its devices
        changed); such an entry's ``pool`` is then the earlier ``PoolState``, so a reader
        of ``allocated``/``reserved`` asks ``pool(key)`` of this snapshot."""
        self.states: dict[PoolKey, PoolState] = {s.key: s for s in sorted(states, key=_key)}
        self.devices_token = object()
        """Shared by the snapshots ``updated`` derives from this one, whose pools all have
        the same gathered slices and devices (only what holds devices differs)."""
        self._local: dict[str, list[Reach]] = {}
        self._elsewhere: list[Reach] = []
        self._reaches: dict[PoolKey, tuple[GatheredPool, list[Reach]]] = {}
        earlier = previous._reaches if previous is not None else {}
        for state in self.states.values():
            found = earlier.get(state.key)
            if found is not None and found[0] is state.gathered:
                listed = found[1]
            else:
                listed = _reach_list(state)
            self._reaches[state.key] = (state.gathered, listed)
            for reach in listed:
                place = reach.placement
                if place.kind == NODE_NAME and place.node_name is not None:
                    self._local.setdefault(place.node_name, []).append(reach)
                else:
                    self._elsewhere.append(reach)

    def updated(self, changed: Mapping[PoolKey, PoolState | None]) -> Pools:
        """This snapshot with the ``changed`` pools replaced (None: the pool is gone).
        While every changed pool keeps its gathered slices and devices, the new snapshot
        shares this one's reach index (a reach names the pool's key; its allocated and
        reserved devices are read from the snapshot), so it costs a copy of the states;
        otherwise it is built anew over this one."""
        states = dict(self.states)
        same_devices = True
        for key, state in changed.items():
            old = states.get(key)
            if state is None:
                same_devices = same_devices and old is None
                states.pop(key, None)
            else:
                same_devices = same_devices and old is not None and old.gathered is state.gathered
                states[key] = state
        if not same_devices:
            return Pools(states.values(), self)
        out = Pools.__new__(Pools)
        out.states = states  # only existing keys were replaced: the order stands
        out.devices_token = self.devices_token
        out._local, out._elsewhere, out._reaches = self._local, self._elsewhere, self._reaches
        return out

    def reachable(self, node: Node) -> list[Reach]:
        """Devices of every pool usable on ``node``, in pool order then device order."""
        found = [r for r in self._elsewhere if reaches(r.placement, node)]
        local = self._local.get(node.name, ())
        if not found:
            return list(local)
        order = {key: i for i, key in enumerate(self.states)}
        both = [*local, *found]
        both.sort(key=lambda r: order[r.pool.key])  # stable: devices keep their pool order
        return both

    def pool(self, key: PoolKey) -> PoolState | None:
        return self.states.get(key)


def _reach_list(state: PoolState) -> list[Reach]:
    """How each device of the pool reaches nodes, in device order."""
    placements = {s.name: s.placement for s in state.gathered.slices}
    out = []
    for device in state.gathered.devices.values():
        place = placements.get(device.slice_name)
        if place is None:
            continue
        if place.per_device and device.state is not None:
            place = device_placement(device.state.nodes)
        out.append(Reach(state, device, place))
    return out


def _key(state: PoolState) -> PoolKey:
    return state.key


def pools_from(
    slices: Iterable[JSON],
    devices: Iterable[DeviceState],
    claims: Iterable[JSON] = (),
    reserved: Iterable[DeviceID] = (),
) -> Pools:
    """Pools from raw slices, the device view's states of their devices, the claims (their
    allocations hold devices) and reserved devices."""
    views: dict[PoolKey, list[SliceView]] = {}
    for obj in slices:
        view = slice_view(obj)
        if view is not None:
            views.setdefault(view.key, []).append(view)
    facts: dict[PoolKey, list[DeviceFacts]] = {}
    for state in devices:
        facts.setdefault((state.driver, state.pool_name), []).append(device_facts(state))
    held: dict[PoolKey, set[str]] = {}
    shares: dict[PoolKey, dict[str, dict[str, int]]] = {}
    for claim in claims:
        for device in dedicated_devices(claim):
            held.setdefault((device.driver, device.pool), set()).add(device.device)
        for device, amounts in shared_devices(claim):
            add_share(shares.setdefault((device.driver, device.pool), {}), device.device, amounts)
    holds: dict[PoolKey, set[str]] = {}
    for device in reserved:
        holds.setdefault((device.driver, device.pool), set()).add(device.device)
    return Pools(
        PoolState(
            gather(key[0], key[1], members, facts.get(key, ())),
            frozenset(held.get(key, ())),
            frozenset(holds.get(key, ())),
            shares.get(key, {}),
        )
        for key, members in views.items()
    )


def add_share(
    shares: dict[str, dict[str, int]],
    device: str,
    amounts: Iterable[tuple[str, int]],
    sign: int = 1,
) -> None:
    """Add (or with ``sign`` -1 take away) one share's consumption to a pool's per-device
    totals; a device whose last share goes drops out. A share that consumes nothing still
    holds its device: its entry stays while any share does (``shares`` counts them under
    the empty name)."""
    entry = shares.setdefault(device, {})
    entry[""] = entry.get("", 0) + sign
    for name, amount in amounts:
        entry[name] = entry.get(name, 0) + sign * amount
    if entry[""] <= 0:
        del shares[device]

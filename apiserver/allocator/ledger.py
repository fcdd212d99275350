"""What one allocator holds and consumes: the held ledger.

A ``Pools`` snapshot says which devices its allocations and reservations hold, every
counter's limit and what the held devices consume of it, and what the shares of
multi-allocatable devices consume (``pool_usage``: once per snapshot, kept while the
snapshot lives, shared by every allocator made over it). A ``Ledger`` starts from that,
adds the devices ``reserved`` for its allocator (held elsewhere, whole) and follows
``hold`` and ``release``, so a caller that commits one allocation after another keeps one
allocator.

Its books (held devices, counter limits and use, what shares consume) are made when first
read: a review answered from each node's cached free candidates
(``planning.Planner.free_candidates``) never reads them, so never pays for copying the
snapshot's usage; until then ``hold`` only adds to ``reserved``. ``touched`` names the
pools where this ledger holds or released devices the snapshot does not say, so cached
free candidates of every other pool stay good.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..api.resource import DeviceID
from ..pools import PoolKey, Pools
from .search import Consumed, Usage


@dataclass(slots=True)
class Books:
    """What is held and consumed, as the search reads it (see ``Ledger.books``)."""

    held: set[DeviceID]
    limits: Usage
    used: Usage
    consumed: Consumed


class Ledger:
    def __init__(self, pools: Pools, reserved: Iterable[DeviceID] = ()) -> None:
        self.pools = pools
        self.reserved: set[DeviceID] = set(reserved)
        """Devices held elsewhere, and what ``hold`` took before the books were made."""
        self.touched: set[PoolKey] = {(d.driver, d.pool) for d in self.reserved}
        """Pools where this ledger holds or released devices the snapshot does not say;
        always this one set (the planner keeps a reference to it)."""
        self._books: Books | None = None

    @property
    def books(self) -> Books:
        """What the snapshot's allocations, reservations and shares hold and consume (see
        ``pool_usage``), then ``reserved`` and what ``hold`` and ``release`` changed; made
        on first use."""
        if self._books is None:
            usage = pool_usage(self.pools)
            self._books = Books(
                set(usage.held),
                dict(usage.limits),
                dict(usage.used),
                {device: dict(amounts) for device, amounts in usage.consumed},
            )
            self._take(self.reserved)
        return self._books

    @property
    def made(self) -> bool:
        """Whether the books have been made (read by tests of their laziness)."""
        return self._books is not None

    @property
    def held(self) -> set[DeviceID]:
        return self.books.held

    @property
    def limits(self) -> Usage:
        return self.books.limits

    @property
    def used(self) -> Usage:
        return self.books.used

    @property
    def consumed(self) -> Consumed:
        """What the shares of multi-allocatable devices consume (see ``search.Consumed``)."""
        return self.books.consumed

    def hold(self, devices: Iterable[DeviceID]) -> None:
        """Take devices (an allocation committed or reserved): later searches skip them and
        their counters count as consumed."""
        devices = list(devices)
        self.touched.update((d.driver, d.pool) for d in devices)
        if self._books is not None:
            self._take(devices)
        else:
            self.reserved.update(devices)  # taken when the books are made

    def release(self, devices: Iterable[DeviceID]) -> None:
        held = self.books.held
        for device in devices:
            self.touched.add((device.driver, device.pool))
            if device in held:
                held.discard(device)
                self._count(device, -1)

    def remaining(self, pool: PoolKey) -> dict[str, dict[str, int]]:
        """The pool's counters left: counter set -> counter -> amount."""
        books = self.books
        out: dict[str, dict[str, int]] = {}
        for (key, set_name, counter), limit in books.limits.items():
            if key == pool:
                used = books.used.get((key, set_name, counter), 0)
                out.setdefault(set_name, {})[counter] = limit - used
        return out

    def _take(self, devices: Iterable[DeviceID]) -> None:
        held = self.books.held
        for device in devices:
            if device not in held:
                held.add(device)
                self._count(device, 1)

    def _count(self, device: DeviceID, sign: int) -> None:
        state = self.pools.pool((device.driver, device.pool))
        facts = state.gathered.devices.get(device.device) if state is not None else None
        if state is None or facts is None:
            return
        books = self.books
        for set_name, amounts in facts.consumes:
            for counter, amount in amounts:
                key = (state.key, set_name, counter)
                if key in books.limits:
                    books.used[key] = books.used.get(key, 0) + sign * amount


@dataclass(frozen=True)
class PoolUsage:
    """What a snapshot's own allocations and reservations hold and consume."""

    held: frozenset[DeviceID]
    limits: Usage
    used: Usage
    consumed: tuple[tuple[DeviceID, Mapping[str, int]], ...] = ()
    """Per device that allocations hold shares of: capacity name -> amount consumed."""


_USAGE: weakref.WeakKeyDictionary[Pools, PoolUsage] = weakref.WeakKeyDictionary()


def pool_usage(pools: Pools) -> PoolUsage:
    """The devices the pools' allocations and reservations hold, every counter's limit and
    what the held devices consume of it; once per snapshot, in pools + held steps (a pool
    without counter sets consumes nothing)."""
    found = _USAGE.get(pools)
    if found is not None:
        return found
    held: set[DeviceID] = set()
    limits: Usage = {}
    used: Usage = {}
    consumed: list[tuple[DeviceID, Mapping[str, int]]] = []
    for state in pools.states.values():
        taken = state.allocated | state.reserved
        held.update(DeviceID(state.key[0], state.key[1], n) for n in taken)
        for name, amounts in state.shared.items():
            consumed.append((DeviceID(state.key[0], state.key[1], name), amounts))
        if not state.gathered.counter_sets:
            continue
        for set_name, counters in state.gathered.counter_sets.items():
            for counter, value in counters.items():
                limits[(state.key, set_name, counter)] = value
        # A shared device's counters are taken once, by its first share.
        for set_name, left in state.gathered.remaining(taken | state.shared.keys()).items():
            for counter, value in left.items():
                key = (state.key, set_name, counter)
                used[key] = limits[key] - value
    found = PoolUsage(frozenset(held), limits, used, tuple(consumed))
    _USAGE[pools] = found
    return found

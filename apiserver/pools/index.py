"""Pools kept current from the device view, the slices and the claims, summarized on demand.

The index holds, per pool (driver, pool name): the views of its slices (from the slice
source), the facts of its devices (from the device view's commits: flattened, patched) and
the names of its allocated devices (from the claim source); the devices DeviceReservations
hold come from ``HeldReservations`` (``reserved``), which tells the index the pools each
reservation change (or lapse) touches. Held devices count as allocated. Each change touches one pool and marks
its cached ``GatheredPool`` and ``PoolSummary`` stale; they are computed when asked for and
kept until the pool changes again. So a request costs a look-up per pool of the driver,
plus a recomputation of the pools that changed since they were last asked for.
``snapshot`` hands the allocator the same gathered pools and held devices the summaries
count, so pool status and the allocator never disagree on what is free. Listeners
(``on_change``) hear the key of every pool a change touches, so the live pool view
recomputes those pools and no others.

CPU: the view's first ``reset`` (every device at once) is absorbed on the index's own task in
chunks that yield to the event loop, commits arriving meanwhile wait for it; ``summaries``
yields between pools whenever it has run for ``budget`` seconds. Handlers of the sources
are cheap (a slice's facts, a claim's allocation results).

Garbage collection (``freeze_gc``, set by the server as for the device view): the first
absorb runs with the cyclic collector paused, and once the claims have been listed too,
``gc.freeze()`` moves what the start-up made (the facts of every device, the claim cache)
out of the collector's sight, so later full collections do not walk it (see
bench/RESULTS.md for the stalls this avoids).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable, Iterable

from ..api.resource import DeviceID, SliceView, dedicated_devices, shared_devices, slice_view
from ..devices import Commit, DeviceState, DeviceView
from ..sources import Source, SourceEvent
from ..storage import EventType
from ..tasks import BackgroundTask
from ..toolkit.collector import collector_paused
from .gather import DeviceFacts, GatheredPool, PoolKey, device_facts, gather
from .reserved import HeldReservations
from .snapshot import Pools, PoolState, add_share
from .summary import PoolSummary, summary_of

log = logging.getLogger("apiserver.pools")

CHUNK = 256
"""Devices absorbed between two checks of the time budget."""

PoolListener = Callable[[PoolKey], None]
"""Told the key of a pool whose slices, devices, allocations or reservations changed (the
pool may have appeared or vanished); it must be cheap: it runs inside the change."""


class _Pool:
    __slots__ = ("devices", "gathered", "slices", "summary")

    def __init__(self) -> None:
        self.slices: dict[str, SliceView] = {}
        self.devices: dict[str, DeviceFacts] = {}
        """By the device's object name (``<slice>.<device>``)."""
        self.gathered: GatheredPool | None = None
        self.summary: PoolSummary | None = None

    def stale(self) -> None:
        """The slices or devices changed."""
        self.gathered = None
        self.summary = None


class PoolIndex:
    """A ``DeviceListener`` of the view and a handler of the slice and claim sources; create
    it before the sources start, so that it hears their first lists."""

    def __init__(
        self,
        view: DeviceView,
        slices: Source,
        claims: Source,
        *,
        reservations: HeldReservations | None = None,
        budget: float = 0.005,
        freeze_gc: bool = False,
    ) -> None:
        """``reservations``: the held reservations (none held without it)."""
        self.view = view
        self.reservations = reservations
        self.freeze_gc = freeze_gc
        self.slices = slices
        self.claims = claims
        self.budget = budget
        self._pools: dict[PoolKey, _Pool] = {}
        self._slices: dict[str, SliceView] = {}
        self._by_driver: dict[str, set[str]] = {}
        """Pools that have at least one slice, by driver."""
        self._sorted: dict[str, list[str]] = {}
        self._allocated: dict[PoolKey, dict[str, int]] = {}
        """Per pool: allocated device name -> how many claim results name it."""
        self._claims: dict[str, tuple[DeviceID, ...]] = {}
        self._shares: dict[str, tuple[tuple[DeviceID, tuple[tuple[str, int], ...]], ...]] = {}
        """Per claim: the shares of multi-allocatable devices its allocation holds."""
        self._shared: dict[PoolKey, dict[str, dict[str, int]]] = {}
        """Per pool: device -> capacity consumed by its shares (see ``add_share``)."""
        self._reset: list[DeviceState] | None = None
        self._buffered: list[Commit] = []
        self._wakeup = asyncio.Event()
        self._absorbed = asyncio.Event()
        self._task = BackgroundTask("pool index", self._run, log)
        self._listeners: list[PoolListener] = []
        self._last: Pools | None = None
        """The last snapshot taken; the next is built over it."""
        self._dirty: set[PoolKey] = set()
        """Pools that changed since the last snapshot."""
        self.longest_absorb = 0.0
        """The longest stretch absorbing a reset held the event loop, in seconds."""
        slices.add_handler(self._on_slice)
        claims.add_handler(self._on_claim)
        view.subscribe(self)
        if reservations is not None:
            reservations.on_change(self._on_reservations)

    def on_change(self, listener: PoolListener) -> None:
        """Tell ``listener`` the key of every pool that changes from now on."""
        self._listeners.append(listener)

    def _changed(self, key: PoolKey) -> None:
        self._dirty.add(key)
        for listener in self._listeners:
            listener(key)

    # -- lifecycle ---------------------------------------------------------------

    async def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.close()

    @property
    def has_synced(self) -> bool:
        return self._absorbed.is_set() and self.slices.has_synced and self.claims.has_synced

    async def wait_synced(self) -> None:
        await self.slices.wait_synced()
        await self.claims.wait_synced()
        await self._absorbed.wait()

    @property
    def settled(self) -> bool:
        """Whether ``settle`` would not wait."""
        return self.view.idle and self._absorbed.is_set()

    async def settle(self) -> None:
        """Until the view has committed what its sources have seen, so that the slices' facts
        and their devices agree (callers bound the wait)."""
        await self.view.wait_idle()
        await self._absorbed.wait()

    # -- reading -----------------------------------------------------------------

    def pool_keys(self) -> list[PoolKey]:
        """Every pool that has at least one slice, by driver then pool name."""
        return [
            (driver, pool) for driver in sorted(self._by_driver) for pool in self.pool_names(driver)
        ]

    def pool_names(self, driver: str) -> list[str]:
        """The driver's pools, sorted by name."""
        names = self._sorted.get(driver)
        if names is None:
            names = sorted(self._by_driver.get(driver, ()))
            self._sorted[driver] = names
        return names

    def gathered(self, driver: str, pool: str) -> GatheredPool | None:
        """The pool gathered from its slices and devices; None if no slice of it is known."""
        entry = self._pools.get((driver, pool))
        if entry is None or not entry.slices:
            return None
        if entry.gathered is None:
            entry.gathered = gather(driver, pool, entry.slices.values(), entry.devices.values())
        return entry.gathered

    def held(self, key: PoolKey) -> set[str]:
        """Names of the pool's devices that allocations or reservations hold, whole or (a
        device that allows multiple allocations) by at least one share."""
        return (
            set(self._allocated.get(key, ()))
            | self.reserved(key)
            | self._shared.get(key, {}).keys()
        )

    def reserved(self, key: PoolKey) -> set[str]:
        """Names of the pool's devices that reservations hold now."""
        return self.reservations.held_in(key) if self.reservations is not None else set()

    def summary(self, driver: str, pool: str) -> PoolSummary | None:
        """The pool's summary; None if no slice of it is known."""
        gathered = self.gathered(driver, pool)
        if gathered is None:
            return None
        entry = self._pools[(driver, pool)]
        if entry.summary is None:
            entry.summary = summary_of(gathered, self.held((driver, pool)))
        return entry.summary

    def snapshot(self, previous: Pools | None = None) -> Pools:
        """Every pool with its allocated and reserved devices, for the allocator. Built
        over the last snapshot taken here: only the pools that changed since get a new
        ``PoolState`` (the others keep theirs, by identity, which the allocator's caches
        rely on), in steps proportional to the changes while no pool's devices did.
        ``previous`` (the first time) lends its reach entries for unchanged devices."""
        reserved = self.reservations.by_pool() if self.reservations is not None else {}
        last = self._last
        if last is None or len(self._dirty) * 4 > len(self._pools):
            states = (self._state(key, reserved) for key in sorted(self._pools))
            taken = Pools((s for s in states if s is not None), last or previous)
        else:
            taken = last.updated({key: self._state(key, reserved) for key in self._dirty})
        self._dirty.clear()
        self._last = taken
        return taken

    def _state(self, key: PoolKey, reserved: dict[PoolKey, frozenset[str]]) -> PoolState | None:
        gathered = self.gathered(*key)
        if gathered is None:
            return None
        return PoolState(
            gathered,
            frozenset(self._allocated.get(key, ())),
            reserved.get(key, frozenset()),
            _copy(self._shared.get(key)),
        )

    # -- reservations ----------------------------------------------------------------

    def _on_reservations(self, pools: set[PoolKey]) -> None:
        for key in pools:
            self._touch(key)

    def is_current(self, driver: str, pool: str) -> bool:
        entry = self._pools.get((driver, pool))
        return entry is not None and entry.summary is not None

    async def summaries(self, driver: str, pool: str | None = None) -> list[PoolSummary]:
        """The summaries of the driver's pools (or of one), sorted by pool name; stale ones
        are computed again, yielding to the event loop every ``budget`` seconds."""
        names = self.pool_names(driver) if pool is None else [pool]
        out: list[PoolSummary] = []
        began = time.perf_counter()
        for name in names:
            if not self.is_current(driver, name) and time.perf_counter() - began > self.budget:
                await asyncio.sleep(0)
                began = time.perf_counter()
            found = self.summary(driver, name)
            if found is not None:
                out.append(found)
        return out

    # -- the device view (DeviceListener) -------------------------------------------

    def reset(self, states: Iterable[DeviceState], revision: int) -> None:
        self._reset = list(states)
        self._buffered.clear()
        self._absorbed.clear()
        self._wakeup.set()

    def apply(self, commit: Commit) -> None:
        if self._reset is not None:
            self._buffered.append(commit)
            return
        for change in commit.changes:
            if change.old is not None:
                self._remove_device(change.old)
            if change.new is not None:
                self._add_device(change.new.name, device_facts(change.new), _key(change.new))

    async def _run(self) -> None:
        frozen = not self.freeze_gc
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            if self._reset is None:
                continue
            with collector_paused(pause=not frozen):
                await self._absorb()
            if not frozen and self._absorbed.is_set():
                await self.claims.wait_synced()
                gc.freeze()
                frozen = True

    async def _absorb(self) -> None:
        """Replace every device with the reset's, in chunks; then the commits that came
        meanwhile, in order."""
        states = self._reset or []
        fresh: dict[PoolKey, dict[str, DeviceFacts]] = {}
        began = time.perf_counter()
        for i, state in enumerate(states):
            fresh.setdefault(_key(state), {})[state.name] = device_facts(state)
            if i % CHUNK == CHUNK - 1 and time.perf_counter() - began > self.budget:
                self.longest_absorb = max(self.longest_absorb, time.perf_counter() - began)
                await asyncio.sleep(0)
                if self._reset is not states:
                    return  # another reset came: start over with it
                began = time.perf_counter()
        changed = [*self._pools, *(key for key in fresh if key not in self._pools)]
        for key, entry in list(self._pools.items()):
            entry.devices = fresh.pop(key, {})
            entry.stale()
            self._drop_if_empty(key, entry)
        for key, devices in fresh.items():
            entry = self._pools.setdefault(key, _Pool())
            entry.devices = devices
        for key in changed:
            self._changed(key)
        self._reset = None
        buffered, self._buffered = self._buffered, []
        for commit in buffered:
            self.apply(commit)
        self.longest_absorb = max(self.longest_absorb, time.perf_counter() - began)
        self._absorbed.set()

    def _add_device(self, name: str, facts: DeviceFacts, key: PoolKey) -> None:
        entry = self._pools.setdefault(key, _Pool())
        entry.devices[name] = facts
        entry.stale()
        self._changed(key)

    def _remove_device(self, state: DeviceState) -> None:
        key = _key(state)
        entry = self._pools.get(key)
        if entry is not None and entry.devices.pop(state.name, None) is not None:
            entry.stale()
            self._drop_if_empty(key, entry)
            self._changed(key)

    # -- slices ----------------------------------------------------------------------

    def _on_slice(self, event: SourceEvent) -> None:
        old = self._slices.pop(event.key, None)
        if old is not None:
            entry = self._pools.get(old.key)
            if entry is not None:
                entry.slices.pop(old.name, None)
                entry.stale()
                if not entry.slices:
                    self._unlist(old.key)
                self._drop_if_empty(old.key, entry)
                self._changed(old.key)
        if event.type is EventType.DELETED:
            return
        facts = slice_view(event.obj)
        if facts is None:
            return
        self._slices[event.key] = facts
        entry = self._pools.setdefault(facts.key, _Pool())
        entry.slices[facts.name] = facts
        entry.stale()
        self._changed(facts.key)
        pools = self._by_driver.setdefault(facts.driver, set())
        if facts.pool not in pools:
            pools.add(facts.pool)
            self._sorted.pop(facts.driver, None)

    def _unlist(self, key: PoolKey) -> None:
        driver, pool = key
        pools = self._by_driver.get(driver)
        if pools is not None and pool in pools:
            pools.discard(pool)
            if not pools:
                del self._by_driver[driver]
            self._sorted.pop(driver, None)

    def _drop_if_empty(self, key: PoolKey, entry: _Pool) -> None:
        if not entry.slices and not entry.devices and self._pools.get(key) is entry:
            del self._pools[key]

    # -- claims ----------------------------------------------------------------------

    def _on_claim(self, event: SourceEvent) -> None:
        self._on_shares(event)
        new = () if event.type is EventType.DELETED else dedicated_devices(event.obj)
        old = self._claims.pop(event.key, ())
        if new:
            self._claims[event.key] = new
        if new == old:
            return
        for driver, pool, device in ((d.driver, d.pool, d.device) for d in old):
            counts = self._allocated.get((driver, pool))
            if counts is None:
                continue
            counts[device] -= 1
            if counts[device] <= 0:
                del counts[device]
                self._touch((driver, pool))
            if not counts:
                del self._allocated[(driver, pool)]
        for driver, pool, device in ((d.driver, d.pool, d.device) for d in new):
            counts = self._allocated.setdefault((driver, pool), {})
            counts[device] = counts.get(device, 0) + 1
            if counts[device] == 1:
                self._touch((driver, pool))

    def _on_shares(self, event: SourceEvent) -> None:
        """Keep the capacity the claim's shares of multi-allocatable devices consume."""
        new = () if event.type is EventType.DELETED else shared_devices(event.obj)
        old = self._shares.pop(event.key, ())
        if new:
            self._shares[event.key] = new
        if new == old:
            return
        for shares, sign in ((old, -1), (new, 1)):
            for device, amounts in shares:
                key = (device.driver, device.pool)
                pool = self._shared.setdefault(key, {})
                add_share(pool, device.device, amounts, sign)
                if not pool:
                    del self._shared[key]
                self._touch(key)

    def _touch(self, key: PoolKey) -> None:
        entry = self._pools.get(key)
        if entry is not None:
            entry.summary = None
            self._changed(key)


def _copy(shared: dict[str, dict[str, int]] | None) -> dict[str, dict[str, int]]:
    return {name: dict(amounts) for name, amounts in shared.items()} if shared else {}


def _key(state: DeviceState) -> PoolKey:
    return (state.driver, state.pool_name)

"""Which devices reservations hold now: every replica's DeviceReservations, from a source,
that have not lapsed, plus the ones this replica made that the source has not seen yet.

The one owner of held devices: the pool index counts them as allocated (pool status, the
ResourcePool kind) and hands them to the allocator in its snapshot; the reservation service
writes reservations and tells this object at once (``made``, ``forget``), so a reserve is
held here from the moment it returns.

A reservation past its ``expirationTime`` no longer holds anything, even before the
releaser deletes it: a timer tells the listeners when the next one lapses, so the pools it
held are counted again without waiting for the delete.

``released_after(revision)``: the devices of reservations whose delete this replica saw
after ``revision``. A replica's releaser deletes a reservation once its own claim cache
shows the claims holding the devices; another replica may see that delete before its own
claim cache has the allocation, and a reserving search there must not take the devices in
between: it counts these as held until its claim cache has passed the delete.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import UTC, datetime

from ..api.resource import DeviceID
from ..kinds.devicereservation import device_ids, expiration, reserved_by
from ..sources import Source, SourceEvent, object_revision
from ..storage import EventType
from ..toolkit import JSON
from .gather import PoolKey

RELEASES_KEPT = 1024
"""Deletes remembered for ``released_after`` (a search only asks about the last moments)."""

ReservationListener = Callable[[set[PoolKey]], None]
"""Told the pools whose reserved devices may have changed; must be cheap."""


def now_utc() -> datetime:
    return datetime.now(UTC)


def lapsed(obj: JSON, now: datetime) -> bool:
    """Whether a reservation no longer holds its devices (an unreadable time: lapsed)."""
    at = expiration(obj)
    return at is None or at <= now


def _pools_of(obj: JSON | None) -> set[PoolKey]:
    return {(driver, pool) for driver, pool, _ in device_ids(obj)} if obj else set()


class HeldReservations:
    """Reads the reservation source; remembers this replica's own new reservations until
    the source has caught up with them."""

    def __init__(self, source: Source, now: Callable[[], datetime] = now_utc) -> None:
        self.source = source
        self.now = now
        self._own: dict[str, JSON] = {}
        self._listeners: list[ReservationListener] = []
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: datetime | None = None
        self._released: list[tuple[int, frozenset[DeviceID]]] = []
        source.add_handler(self._on_event)

    def on_change(self, listener: ReservationListener) -> None:
        self._listeners.append(listener)

    # -- what the reservation service tells -----------------------------------------------

    def made(self, obj: JSON) -> None:
        """A reservation this replica just stored."""
        self._own[obj["metadata"]["name"]] = obj
        self._changed(_pools_of(obj), obj)

    def forget(self, name: str) -> None:
        """A reservation this replica just deleted."""
        obj = self._own.pop(name, None)
        if obj is not None:
            self._changed(_pools_of(obj))

    # -- reading ----------------------------------------------------------------------

    def reservations(self) -> list[JSON]:
        """Every reservation known here, lapsed or not."""
        seen = self.source.revision
        for name, obj in list(self._own.items()):
            if object_revision(obj) <= seen:
                del self._own[name]  # the source has it, or has seen it go
        known = {obj["metadata"]["name"]: obj for obj in self.source.items()}
        for name, obj in self._own.items():
            known.setdefault(name, obj)
        return list(known.values())

    def current(self) -> list[JSON]:
        """The reservations that hold their devices now."""
        now = self.now()
        return [obj for obj in self.reservations() if not lapsed(obj, now)]

    def held(self) -> set[DeviceID]:
        """Every device a reservation holds now."""
        return {DeviceID(*d) for obj in self.current() for d in device_ids(obj)}

    def by_pool(self) -> dict[PoolKey, frozenset[str]]:
        """The names of the held devices, per pool."""
        names: dict[PoolKey, set[str]] = {}
        for driver, pool, device in self.held():
            names.setdefault((driver, pool), set()).add(device)
        return {key: frozenset(found) for key, found in names.items()}

    def held_in(self, key: PoolKey) -> set[str]:
        """The names of the pool's devices a reservation holds now."""
        return {
            device
            for obj in self.current()
            for driver, pool, device in device_ids(obj)
            if (driver, pool) == key
        }

    def released_after(self, revision: int) -> set[DeviceID]:
        """The devices of reservations deleted after ``revision`` (of this source's store);
        forgets the deletes at or before it."""
        self._released = [(at, ids) for at, ids in self._released if at > revision]
        return {device for _, ids in self._released for device in ids}

    def count_by(self, user: str, counting: Callable[[JSON], bool] | None = None) -> int:
        """How many reservations made for ``user`` hold devices now (and, with
        ``counting``, are among those it says count)."""
        return sum(
            1
            for obj in self.current()
            if reserved_by(obj) == user and (counting is None or counting(obj))
        )

    # -- changes ----------------------------------------------------------------------

    def _on_event(self, event: SourceEvent) -> None:
        if event.type is EventType.DELETED:
            ids = frozenset(DeviceID(*d) for d in device_ids(event.obj))
            self._released = [*self._released[-(RELEASES_KEPT - 1) :], (self.source.revision, ids)]
        stored = event.obj if event.type is not EventType.DELETED else None
        self._changed(_pools_of(event.obj) | _pools_of(event.old), stored)

    def _changed(self, pools: set[PoolKey], stored: JSON | None = None) -> None:
        """``stored``: a reservation now held, whose expiration may come before the timer's
        (one that went can only make the timer early, and an early timer looks again)."""
        if pools:
            for listener in self._listeners:
                listener(pools)
        at = expiration(stored) if stored is not None else None
        if at is not None and at > self.now() and (self._timer_at is None or at < self._timer_at):
            self._schedule(at)

    def _next_expiration(self) -> datetime | None:
        now = self.now()
        upcoming = [at for obj in self.reservations() if (at := expiration(obj)) and at > now]
        return min(upcoming, default=None)

    def _schedule(self, at: datetime | None) -> None:
        """Wake at ``at`` (the next expiration), so its pools are counted free again."""
        now = self.now()
        if at == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._timer_at = None, None
        if at is None:
            return
        with contextlib.suppress(RuntimeError):  # no running loop: nothing to wake
            loop = asyncio.get_running_loop()
            # A hair past the deadline, so the reservation has lapsed by then.
            self._timer = loop.call_later((at - now).total_seconds() + 0.01, self._lapse)
            self._timer_at = at

    def _lapse(self) -> None:
        self._timer, self._timer_at = None, None
        now = self.now()
        gone: set[PoolKey] = set()
        for obj in self.reservations():
            if lapsed(obj, now):  # until the releaser deletes it: cheap to tell again
                gone |= _pools_of(obj)
        self._changed(gone)
        self._schedule(self._next_expiration())

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._timer_at = None, None

"""Which devices are held now: every replica's reservations, from a source, that have not
lapsed, plus the ones this replica made that the source has not seen yet.

A reservation past its ``expirationTime`` no longer holds anything, even before the
releaser deletes it; a reserve that finds such a holder in its way deletes it first.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ..kinds.devicereservation import device_ids, expiration
from ..sources import Source, object_revision

DeviceID = tuple[str, str, str]
"""``(driver, pool, device)``; equal to, and hashed as, the allocator's device ids."""


def now_utc() -> datetime:
    return datetime.now(UTC)


def lapsed(obj: dict[str, Any], now: datetime) -> bool:
    """Whether a reservation no longer holds its devices (an unreadable time: lapsed)."""
    at = expiration(obj)
    return at is None or at <= now


class HeldDevices:
    """Reads the reservation source; remembers this replica's own new reservations until
    the source has caught up with them, so a reserve is held here from the moment it
    returns."""

    def __init__(self, source: Source, now: Callable[[], datetime] = now_utc) -> None:
        self.source = source
        self.now = now
        self._own: dict[str, dict[str, Any]] = {}

    def made(self, obj: dict[str, Any]) -> None:
        """A reservation this replica just stored."""
        self._own[obj["metadata"]["name"]] = obj

    def forget(self, name: str) -> None:
        """A reservation this replica just deleted."""
        self._own.pop(name, None)

    def reservations(self) -> list[dict[str, Any]]:
        """Every reservation known here, lapsed or not."""
        seen = self.source.revision
        for name, obj in list(self._own.items()):
            if object_revision(obj) <= seen:
                del self._own[name]  # the source has it, or has seen it go
        known = {obj["metadata"]["name"]: obj for obj in self.source.items()}
        for name, obj in self._own.items():
            known.setdefault(name, obj)
        return list(known.values())

    def held(self) -> set[DeviceID]:
        now = self.now()
        return {
            device
            for obj in self.reservations()
            if not lapsed(obj, now)
            for device in device_ids(obj)
        }

"""The reservation service: reserve devices for claims, release them, say what is held.

``reserve`` stores a DeviceReservation through the kind's registry, in-process (users
cannot create one): the reservation and a key per device are one transaction, so it is
all or nothing across its devices, and of concurrent reservations of a device, on this
replica or another on the same store, exactly one wins; the others get 409 Conflict
naming the device. A lapsed reservation in the way is deleted and the reserve tried again.

``pending`` marks the devices a reserve on this replica is about to take (so that other
searches here leave them alone until the reserve has won or lost) and checks the per-user
cap on held reservations: a user with ``max_per_user`` reservations held (and pending) gets
429 TooManyRequests; a reservation whose claims hold its devices is held no more, however
long its delete takes. The count is this replica's view: every replica's stored reservations
plus its own pending ones; two replicas racing may each let one more through.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..api.resource import DeviceReservation
from ..kinds.devicereservation import DeviceReservationStrategy
from ..machinery import Registry, WriteOptions, errors
from ..machinery.user import UserInfo
from ..pools import HeldReservations, lapsed, now_utc
from ..sources import Source, StoreSource
from ..toolkit import json_copy
from ..toolkit.timestamps import rfc3339
from .releaser import DeviceID, ReservationReleaser, delete_reservation

log = logging.getLogger("apiserver.reservations")

SERVER_USER = UserInfo("system:dra-apiserver", groups=("system:masters",))
FIELD_MANAGER = "dra-apiserver"
_ATTEMPTS = 4
"""Reserve tries: each retry follows the removal of a lapsed holder, so a few suffice."""
MAX_PER_USER = 100
"""Reservations one user may hold at once, by default (``--max-reservations-per-user``): a
scheduler binding this many pods at the same moment; each lasts seconds (until its claims
are written) or at most its ``reservationSeconds``."""
RETRY_AFTER = 1
RELEASE_RATE = 500.0
"""Reservations the releaser deletes per second at most (``release_burst`` at once): one
follows each bind, so this is well above the pods per second a scheduler binds, and only
a mass expiry (every reserve of an outage lapsing together) meets it."""
RELEASE_BURST = 500


@dataclass(frozen=True)
class ClaimRef:
    """A claim a reservation is for."""

    namespace: str
    name: str
    uid: str = ""


@dataclass
class Pending:
    """Devices a reserve on this replica is about to take, for a user."""

    devices: frozenset[DeviceID]
    user: str
    done: asyncio.Event = field(default_factory=asyncio.Event)


class ReservationService:
    def __init__(
        self,
        registry: Registry,
        claims: Source,
        *,
        now: Callable[[], datetime] = now_utc,
        release_rate: float = RELEASE_RATE,
        release_burst: int = RELEASE_BURST,
        max_per_user: int = MAX_PER_USER,
    ) -> None:
        """``registry``: the DeviceReservation registry (its strategy names the device keys);
        ``claims``: the ResourceClaim source (releases once an allocation holds the devices);
        ``max_per_user``: the cap on one user's held reservations (0: none)."""
        strategy = registry.strategy
        if not isinstance(strategy, DeviceReservationStrategy):
            raise TypeError("the reservation service needs the DeviceReservation registry")
        self.registry = registry
        self.strategy = strategy
        self.source = StoreSource(
            registry.store, registry.resource.key_prefix(), name=registry.resource.plural
        )
        self.devices = HeldReservations(self.source, now)
        """What is held: the pools layer's view, which the pool index reads too."""
        self.max_per_user = max_per_user
        self._pending: dict[int, Pending] = {}
        self._tickets = itertools.count()
        self.releaser = ReservationReleaser(
            self.devices, claims, registry, rate=release_rate, burst=release_burst
        )

    async def start(self) -> None:
        await self.source.start()
        await self.releaser.start()

    async def close(self) -> None:
        await self.releaser.close()
        await self.source.close()
        self.devices.close()

    def readiness(self) -> dict[str, bool]:
        return {"reservations": self.source.has_synced}

    # -- what the review calls -------------------------------------------------------

    def held(self) -> set[DeviceID]:
        """The devices reserved now, by any replica (lapsed reservations hold nothing)."""
        return {(d.driver, d.pool, d.device) for d in self.devices.held()}

    def in_flight(self) -> set[DeviceID]:
        """The devices reserves on this replica are taking right now (``pending``)."""
        return {d for p in self._pending.values() for d in p.devices}

    @contextmanager
    def pending(self, devices: Collection[DeviceID], user: str) -> Iterator[Pending]:
        """Mark ``devices`` as being reserved for ``user`` until the block ends: check the
        cap and mark in one step (no await), so concurrent reviews on this replica count
        each other. Raises 429 TooManyRequests when ``user`` is at the cap."""
        if self.max_per_user > 0:
            held = self._holding(user)
            held += sum(1 for p in self._pending.values() if p.user == user)
            if held >= self.max_per_user:
                raise errors.too_many_requests(
                    f"user {user!r} holds {held} device reservations, the most one user may"
                    f" hold at once ({self.max_per_user}); retry once some are released",
                    RETRY_AFTER,
                )
        ticket = next(self._tickets)
        entry = Pending(frozenset(devices), user)
        self._pending[ticket] = entry
        try:
            yield entry
        finally:
            del self._pending[ticket]
            entry.done.set()

    def _holding(self, user: str) -> int:
        """How many of ``user``'s reservations still hold devices for a claim: one whose
        claims hold its devices is only waiting for the releaser, which deletes at its own
        pace, and counts no more (else a scheduler binding faster than that pace would
        meet the cap with every claim written)."""
        return self.devices.count_by(user, lambda obj: self.releaser.why_due(obj) is None)

    async def settled(self, devices: Collection[DeviceID]) -> None:
        """Until no reserve on this replica is taking any of ``devices``."""
        wanted = set(devices)
        while waiting := [p for p in self._pending.values() if p.devices & wanted]:
            await waiting[0].done.wait()

    async def reserve(
        self,
        node: str,
        devices: Sequence[DeviceID],
        claims: Sequence[ClaimRef],
        seconds: float,
        *,
        user: str | None = None,
    ) -> DeviceReservation:
        """Hold ``devices`` on ``node`` for ``claims`` for ``seconds``: all of them or none;
        ``user``: who asked (``spec.username``, counted against the cap).

        Raises a 409 Conflict ``StatusError`` naming the first device another reservation
        holds (its cause's field is ``spec.devices[i]``), 422 for a malformed request.
        """
        expires = _whole_second_after(self.devices.now() + timedelta(seconds=max(seconds, 0)))
        body = self._body(node, devices, claims, expires, user)
        for attempt in range(_ATTEMPTS):
            try:
                result = await self.registry.create(
                    None,
                    json_copy(body),
                    WriteOptions(field_manager=FIELD_MANAGER, user=SERVER_USER),
                )
            except errors.StatusError as err:
                taken = taken_device(err, devices)
                if taken is None or attempt == _ATTEMPTS - 1:
                    raise
                if not await self._clear_lapsed_holder(taken):
                    raise
                continue
            obj = result.obj.obj
            self.devices.made(obj)
            return DeviceReservation.model_validate(obj)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    async def release(self, name: str) -> bool:
        """Delete a reservation and free its devices; False if there was none."""
        try:
            current = await self.registry.get(None, name)
        except errors.StatusError as err:
            if err.code == 404:
                self.devices.forget(name)
                return False
            raise
        deleted = await delete_reservation(self.registry, current.obj)
        self.devices.forget(name)
        return deleted

    # -- internals -------------------------------------------------------------------

    def _body(
        self,
        node: str,
        devices: Sequence[DeviceID],
        claims: Sequence[ClaimRef],
        expires: datetime,
        user: str | None,
    ) -> dict[str, Any]:
        first = claims[0].name if claims else node
        return {
            "apiVersion": self.registry.resource.group_version,
            "kind": self.registry.resource.kind,
            "metadata": {"generateName": f"{first[:57].rstrip('-.')}-"},
            "spec": {
                "nodeName": node,
                "devices": [{"driver": d, "pool": p, "device": n} for d, p, n in devices],
                "claims": [
                    {"namespace": c.namespace, "name": c.name, **({"uid": c.uid} if c.uid else {})}
                    for c in claims
                ],
                "expirationTime": rfc3339(expires),
                **({"username": user} if user else {}),
            },
        }

    async def _clear_lapsed_holder(self, device: DeviceID) -> bool:
        """Delete the lapsed reservation holding ``device``; False if its holder has not
        lapsed (the conflict stands)."""
        lock = await self.registry.store.get(self.strategy.lock_key(device))
        if lock is None:
            return True  # released meanwhile: try again
        name = lock.obj.get("reservation")
        try:
            holder = await self.registry.get(None, str(name))
        except errors.StatusError as err:
            if err.code == 404:
                return True
            raise
        if not lapsed(holder.obj, self.devices.now()):
            return False
        await delete_reservation(self.registry, holder.obj)
        self.devices.forget(str(name))
        log.info("released lapsed devicereservation %s in the way of a reserve", name)
        return True


def _whole_second_after(at: datetime) -> datetime:
    """``at`` rounded up to a whole second: expiration times are written in seconds, and a
    reservation must not lapse before the time it was asked for."""
    whole = at.replace(microsecond=0)
    return whole if whole == at else whole + timedelta(seconds=1)


def taken_device(err: errors.StatusError, devices: Sequence[DeviceID]) -> DeviceID | None:
    """The device a reserve's Conflict names (its cause ``spec.devices[i]``): another
    reservation holds it."""
    if err.code != 409:
        return None
    for cause in (err.details or {}).get("causes") or []:
        field = str(cause.get("field", ""))
        if field.startswith("spec.devices[") and field.endswith("]"):
            index = field[len("spec.devices[") : -1]
            if index.isdigit() and int(index) < len(devices):
                return devices[int(index)]
    return None

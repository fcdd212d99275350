"""Deletes reservations that no longer need to exist: lapsed ones (past
``expirationTime``), and those whose claims now hold the reserved devices through a stored
allocation (the committed claim status replaces the reservation, DESIGN §8).

A change is checked where it matters: a reservation's own change checks that reservation,
and a claim's change checks the reservations made for that claim (an index by claim), so
a change costs the same however many reservations are held. Expirations wait in a heap;
the loop wakes at the next one, and a full sweep runs at start and every ``interval`` as a
safety net. Each reservation due goes into a coalescing work queue, and one worker deletes
them, paced by a token bucket, with the uid as precondition (a new reservation under the
same name is not touched). Every replica runs one; a reservation another replica deleted
first is simply gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
from datetime import datetime
from typing import Any

from ..kinds.devicereservation import device_ids, expiration
from ..machinery import DeleteOptions, Registry, errors
from ..pools import HeldReservations, lapsed
from ..sources import Source, SourceEvent
from ..storage import EventType
from ..tasks import BackgroundTask
from ..toolkit import CoalescingQueue, TokenBucket, run_worker

log = logging.getLogger("apiserver.reservations")


DeviceID = tuple[str, str, str]
"""``(driver, pool, device)``; equal to, and hashed as, the allocator's device ids."""


def allocated_devices_of(claim: dict[str, Any]) -> set[DeviceID]:
    """The devices of a claim's stored allocation (``status.allocation.devices.results``)."""
    allocation = (claim.get("status") or {}).get("allocation")
    if not isinstance(allocation, dict):
        return set()
    results = (allocation.get("devices") or {}).get("results") or []
    return {
        (r["driver"], r["pool"], r["device"])
        for r in results
        if isinstance(r, dict)
        and all(isinstance(r.get(k), str) for k in ("driver", "pool", "device"))
    }


class ReservationReleaser:
    def __init__(
        self,
        held: HeldReservations,
        claims: Source,
        registry: Registry,
        *,
        rate: float,
        burst: int,
        interval: float = 60.0,
    ) -> None:
        self.held = held
        self.reservations = held.source
        self.claims = claims
        self.registry = registry
        self.interval = interval
        self.released: dict[str, str] = {}
        """Why each reservation this replica deleted went: ``expired`` or ``allocated``."""
        # A reservation whose delete failed (the store away) is tried again at most once a
        # second.
        self._queue = CoalescingQueue(interval=1.0)
        self._bucket = TokenBucket(rate, burst)
        self._wakeup = asyncio.Event()
        self._for_claim: dict[str, set[str]] = {}
        """Claim key (``namespace/name``) -> the reservations made for that claim."""
        self._expiries: list[tuple[datetime, str]] = []
        """(expiration, reservation name), a heap; an entry whose reservation is gone or
        has another expiration by now is dropped when it comes up."""
        self._sweeper = BackgroundTask("reservation release sweep", self._sweep_loop, log)
        self._worker = BackgroundTask(
            "reservation release",
            lambda: run_worker(self._queue, self._bucket, self._release, self._failed),
            log,
        )
        self.reservations.add_handler(self._reservation_changed)
        claims.add_handler(self._claim_changed)

    def _reservation_changed(self, event: SourceEvent) -> None:
        name = event.key
        for key in _claim_keys(event.old):  # the state it was indexed under
            named = self._for_claim.get(key)
            if named is not None:
                named.discard(name)
                if not named:
                    del self._for_claim[key]
        if event.type is EventType.DELETED:
            return
        for key in _claim_keys(event.obj):
            self._for_claim.setdefault(key, set()).add(name)
        at = expiration(event.obj)
        if at is not None:
            if not self._expiries or at < self._expiries[0][0]:
                self._wakeup.set()  # sooner than the loop waits for
            heapq.heappush(self._expiries, (at, name))
        self._check(name, event.obj)

    def _claim_changed(self, event: SourceEvent) -> None:
        for name in list(self._for_claim.get(event.key, ())):
            obj = self.reservations.get(name)
            if obj is not None:
                self._check(name, obj)

    def _check(self, name: str, obj: dict[str, Any]) -> None:
        if self.why_due(obj) is not None:
            self._queue.add(name)

    async def start(self) -> None:
        self._worker.start()
        self._sweeper.start()

    async def close(self) -> None:
        await self._sweeper.close()
        await self._worker.close()

    def why_due(self, obj: dict[str, Any]) -> str | None:
        """``expired``, ``allocated`` (every device is in an allocation of one of its
        claims), or None while the reservation still has a purpose."""
        if lapsed(obj, self.held.now()):
            return "expired"
        wanted = set(device_ids(obj))
        for claim in _claims_of(obj):
            stored = self.claims.get(_claim_key(claim))
            if stored is None:
                continue
            uid = claim.get("uid")
            if uid and (stored.get("metadata") or {}).get("uid") != uid:
                continue  # a claim of the same name, not the one reserved for
            wanted -= allocated_devices_of(stored)
        return "allocated" if not wanted else None

    def sweep(self) -> None:
        """Queue every reservation that is due (the safety net under the checks per
        change)."""
        for obj in self.reservations.items():
            self._check(obj["metadata"]["name"], obj)

    def _lapsed_now(self) -> float:
        """Queue the reservations whose expiration has come; the seconds until the next."""
        now = self.held.now()
        while self._expiries:
            at, name = self._expiries[0]
            if at > now:
                return min(self.interval, (at - now).total_seconds())
            heapq.heappop(self._expiries)
            obj = self.reservations.get(name)
            if obj is not None and expiration(obj) == at:
                self._check(name, obj)
        return self.interval

    async def _sweep_loop(self) -> None:
        await self.reservations.wait_synced()
        await self.claims.wait_synced()
        swept = asyncio.get_running_loop().time()
        self.sweep()
        while True:
            self._wakeup.clear()
            wait = self._lapsed_now()
            with contextlib.suppress(TimeoutError):
                # A hair past the deadline, so the reservation has lapsed by then.
                async with asyncio.timeout(max(wait, 0.0) + 0.01):
                    await self._wakeup.wait()
            if asyncio.get_running_loop().time() - swept >= self.interval:
                swept = asyncio.get_running_loop().time()
                self.sweep()

    async def _release(self, name: str) -> None:
        obj = self.reservations.get(name)
        if obj is None:
            return
        why = self.why_due(obj)
        if why is None:
            return
        if await delete_reservation(self.registry, obj):
            self.held.forget(name)
            self.released[name] = why
            log.info("released devicereservation %s: %s", name, why)

    def _failed(self, name: str, exc: Exception) -> None:
        log.warning("releasing devicereservation %s failed, will retry: %s", name, exc)
        self._queue.add(name)  # worked again once its interval has passed


def _claims_of(obj: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The claims a reservation is for, as it names them (``spec.claims``)."""
    return list(((obj or {}).get("spec") or {}).get("claims") or [])


def _claim_key(claim: dict[str, Any]) -> str:
    """A claim a reservation names, as the claim source keys it (``namespace/name``)."""
    return f"{claim.get('namespace')}/{claim.get('name')}"


def _claim_keys(obj: dict[str, Any] | None) -> list[str]:
    return [_claim_key(c) for c in _claims_of(obj)]


async def delete_reservation(registry: Registry, obj: dict[str, Any]) -> bool:
    """Delete this reservation (its uid as precondition) and the device keys it holds;
    False if it was gone already or replaced."""
    meta = obj.get("metadata") or {}
    try:
        await registry.delete(
            None, str(meta.get("name")), DeleteOptions(precondition_uid=meta.get("uid"))
        )
    except errors.StatusError as err:
        if err.code in (404, 409):
            return False
        raise
    return True

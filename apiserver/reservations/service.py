"""The reservation service: reserve devices for claims, release them, say what is held.

``reserve`` stores a DeviceReservation through the kind's registry, in-process (users
cannot create one): the reservation and a key per device are one transaction, so it is
all or nothing across its devices, and of concurrent reservations of a device, on this
replica or another on the same store, exactly one wins; the others get 409 Conflict
naming the device. A lapsed reservation in the way is deleted and the reserve tried again.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..api.resource.devicereservation import DeviceReservation
from ..kinds.devicereservation import DeviceReservationStrategy
from ..machinery import errors
from ..machinery.registry import Registry, WriteOptions
from ..machinery.user import UserInfo
from ..sources import Source, StoreSource
from .held import DeviceID, HeldDevices, lapsed, now_utc
from .releaser import ReservationReleaser, delete_reservation

log = logging.getLogger("apiserver.reservations")

SERVER_USER = UserInfo("system:dra-apiserver", groups=("system:masters",))
FIELD_MANAGER = "dra-apiserver"
_ATTEMPTS = 4
"""Reserve tries: each retry follows the removal of a lapsed holder, so a few suffice."""


@dataclass(frozen=True)
class ClaimRef:
    """A claim a reservation is for."""

    namespace: str
    name: str
    uid: str = ""


class ReservationService:
    def __init__(
        self,
        registry: Registry,
        claims: Source,
        *,
        now: Callable[[], datetime] = now_utc,
        release_rate: float = 50.0,
        release_burst: int = 100,
    ) -> None:
        """``registry``: the DeviceReservation registry (its strategy names the device keys);
        ``claims``: the ResourceClaim source (releases once an allocation holds the devices)."""
        strategy = registry.strategy
        if not isinstance(strategy, DeviceReservationStrategy):
            raise TypeError("the reservation service needs the DeviceReservation registry")
        self.registry = registry
        self.strategy = strategy
        self.source = StoreSource(
            registry.store, registry.resource.key_prefix(), name=registry.resource.plural
        )
        self.devices = HeldDevices(self.source, now)
        self.releaser = ReservationReleaser(
            self.devices, claims, registry, rate=release_rate, burst=release_burst
        )

    async def start(self) -> None:
        await self.source.start()
        await self.releaser.start()

    async def close(self) -> None:
        await self.releaser.close()
        await self.source.close()

    def readiness(self) -> dict[str, bool]:
        return {"reservations": self.source.has_synced}

    # -- what the review calls -------------------------------------------------------

    def held(self) -> set[DeviceID]:
        """The devices reserved now, by any replica (lapsed reservations hold nothing)."""
        return self.devices.held()

    async def reserve(
        self,
        node: str,
        devices: Sequence[DeviceID],
        claims: Sequence[ClaimRef],
        seconds: float,
    ) -> DeviceReservation:
        """Hold ``devices`` on ``node`` for ``claims`` for ``seconds``: all of them or none.

        Raises a 409 Conflict ``StatusError`` naming the first device another reservation
        holds (its cause's field is ``spec.devices[i]``), 422 for a malformed request.
        """
        expires = _whole_second_after(self.devices.now() + timedelta(seconds=max(seconds, 0)))
        body = self._body(node, devices, claims, expires)
        for attempt in range(_ATTEMPTS):
            try:
                result = await self.registry.create(
                    None,
                    copy.deepcopy(body),
                    WriteOptions(field_manager=FIELD_MANAGER, user=SERVER_USER),
                )
            except errors.StatusError as err:
                taken = _taken_device(err, devices)
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
                "expirationTime": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
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


def _taken_device(err: errors.StatusError, devices: Sequence[DeviceID]) -> DeviceID | None:
    """The device a create's Conflict names (its cause ``spec.devices[i]``)."""
    if err.code != 409:
        return None
    for cause in (err.details or {}).get("causes") or []:
        field = str(cause.get("field", ""))
        if field.startswith("spec.devices[") and field.endswith("]"):
            index = field[len("spec.devices[") : -1]
            if index.isdigit() and int(index) < len(devices):
                return devices[int(index)]
    return None

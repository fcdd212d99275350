"""DeviceReservation: cluster-scoped, made only by the server, served for get, list, watch
and delete.

Each reserved device is a key the reservation holds alone
(``/<group>/devicereservationlocks/<driver>/<pool>/<device>``, naming the reservation),
created and deleted with it in one transaction: of two reservations wanting a device, only
one is stored, on one store or across replicas of one etcd. Device names cannot contain a
slash and driver names neither, so the key is unambiguous although a pool name may.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any, ClassVar

from ..api.field import FieldError
from ..api.resource import (
    DeviceReservation,
    validate_device_reservation,
    validate_device_reservation_update,
)
from ..machinery import Column, ExclusiveKey, FieldGetter, Strategy, human_duration, path, string_at
from ..toolkit.timestamps import parse_rfc3339

VERSION = "v1alpha3"
SERVED_VERBS = ("delete", "get", "list", "watch")
"""Users read and release reservations; only the server makes them."""


def device_ids(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(driver, pool, device)`` of every device a (stored, so valid) reservation holds."""
    devices = (obj.get("spec") or {}).get("devices") or []
    return [
        (d["driver"], d["pool"], d["device"])
        for d in devices
        if isinstance(d, dict)
        and all(isinstance(d.get(k), str) for k in ("driver", "pool", "device"))
    ]


def expiration(obj: dict[str, Any]) -> datetime | None:
    """When a reservation lapses; None if it cannot be read."""
    written = (obj.get("spec") or {}).get("expirationTime")
    return _moment(written) if isinstance(written, str) else None


@functools.lru_cache(maxsize=4096)
def _moment(written: str) -> datetime | None:
    """A time as written, parsed once: what is held is asked about on every review and
    every change, of the same few reservations."""
    return parse_rfc3339(written)


def reserved_by(obj: dict[str, Any]) -> str | None:
    """The user a reservation was made for (``spec.username``), if recorded."""
    user = (obj.get("spec") or {}).get("username")
    return user if isinstance(user, str) else None


def _devices_cell(obj: dict[str, Any]) -> str:
    ids = device_ids(obj)
    if not ids:
        return "<none>"
    first = "/".join(ids[0])
    return first if len(ids) == 1 else f"{first},+{len(ids) - 1} more"


def _expires_cell(obj: dict[str, Any]) -> str:
    at = expiration(obj)
    if at is None:
        return "<unknown>"
    left = int((at - datetime.now(UTC)).total_seconds())
    return "<expired>" if left <= 0 else human_duration(left)


class DeviceReservationStrategy(Strategy[DeviceReservation]):
    model = DeviceReservation
    version = VERSION
    kind = "DeviceReservation"
    plural = "devicereservations"
    singular = "devicereservation"
    verbs = SERVED_VERBS
    columns: ClassVar[tuple[Column, ...]] = (
        Column("Node", "string", path("spec", "nodeName"), "The node the devices are held for."),
        Column("Devices", "string", _devices_cell, "The devices held."),
        Column("Expires", "string", _expires_cell, "Time left until the reservation lapses."),
    )
    extra_field_getters: ClassVar[dict[str, FieldGetter]] = {
        "spec.nodeName": string_at("spec", "nodeName")
    }

    def __init__(self, group: str) -> None:
        super().__init__(group)
        self.lock_prefix = f"/{group}/devicereservationlocks/"

    def lock_key(self, device: tuple[str, str, str]) -> str:
        return self.lock_prefix + "/".join(device)

    def exclusive_keys(self, obj: dict[str, Any]) -> list[ExclusiveKey]:
        name = obj["metadata"]["name"]
        return [
            ExclusiveKey(
                self.lock_key(device),
                {"reservation": name},
                f"spec.devices[{i}]",
                f"device {'/'.join(device)}",
            )
            for i, device in enumerate(device_ids(obj))
        ]

    def validate(self, obj: DeviceReservation) -> list[FieldError]:
        return validate_device_reservation(obj)

    def validate_update(self, new: DeviceReservation, old: DeviceReservation) -> list[FieldError]:
        return validate_device_reservation_update(new, old)

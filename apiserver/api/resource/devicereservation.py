"""``DeviceReservation``: devices held for an allocation in flight, until it expires.

Only the server makes one, for a reserving AllocationReview; users get, list, watch and
delete it (a delete releases the devices). Each reserved device is held alone: the
reservation takes a storage key per device in the same transaction as itself, so two
reservations never share a device (see ``kinds.devicereservation``).
"""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel, Time
from ..meta import KindModel
from .allocationreview import CLAIMS_MAX  # a reservation holds for one review's claims

DEVICES_MAX = 128
"""Four claims' worth of upstream's 32 results per allocation."""


class ReservedDevice(APIModel):
    """One device held, named as an allocation result names it."""

    driver: str = Field(description="The DRA driver of the device.")
    pool: str = Field(description="The pool of the device.")
    device: str = Field(description="The device's name within the pool.")


class ReservationClaim(APIModel):
    """A ResourceClaim the devices are held for."""

    namespace: str = Field(description="The claim's namespace.")
    name: str = Field(description="The claim's name.")
    uid: str | None = Field(None, description="The claim's uid, if known.")


class DeviceReservationSpec(APIModel):
    """What is held, for whom, and until when. Set by the server; immutable."""

    node_name: str = Field(description="The node the allocation was chosen for.")
    devices: list[ReservedDevice] = Field(
        description=f"The devices held, at most {DEVICES_MAX}, each once.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    claims: list[ReservationClaim] = Field(
        description=f"The claims the devices are held for, at most {CLAIMS_MAX}. Once one of"
        " them is allocated some of these devices, the reservation is released.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    expiration_time: Time = Field(
        description="When the reservation lapses: from then on its devices are free, and the"
        " server deletes it."
    )
    username: str | None = Field(
        None,
        description="The user whose AllocationReview made the reservation (its reservations"
        " count against that user's cap on held reservations).",
    )


class DeviceReservation(KindModel):
    """Devices held for an allocation in flight (made by a reserving AllocationReview)."""

    spec: DeviceReservationSpec = Field(description="What is held. Immutable.")

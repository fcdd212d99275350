"""Device reservations: devices held for allocations in flight, with expiry.

``ReservationService`` makes them (``reserve``, atomic across devices and across replicas
of one store), releases them (``release``), and keeps what is held now current in the pools
layer's ``HeldReservations`` (``devices``; from a watch of every replica's reservations),
which the pool index, and through it the allocator and pool status, read. ``pending``
marks devices a reserve on this replica is about to take, within a per-user cap on held
reservations. Its ``ReservationReleaser`` deletes a reservation once it lapses or once its
claims' allocations hold its devices.
"""

from .releaser import DeviceID, ReservationReleaser, allocated_devices_of
from .service import MAX_PER_USER, ClaimRef, Pending, ReservationService, taken_device

__all__ = [
    "MAX_PER_USER",
    "ClaimRef",
    "DeviceID",
    "Pending",
    "ReservationReleaser",
    "ReservationService",
    "allocated_devices_of",
    "taken_device",
]

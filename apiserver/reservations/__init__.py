"""Device reservations: devices held for allocations in flight, with expiry.

``ReservationService`` makes them (``reserve``, atomic across devices and across replicas
of one store), releases them (``release``), and says which devices are held now (``held``,
from a watch of every replica's reservations). Its ``ReservationReleaser`` deletes a
reservation once it lapses or once its claims' allocations hold its devices.
"""

from .held import DeviceID, HeldDevices
from .releaser import ReservationReleaser, allocated_devices_of
from .service import ClaimRef, ReservationService

__all__ = [
    "ClaimRef",
    "DeviceID",
    "HeldDevices",
    "ReservationReleaser",
    "ReservationService",
    "allocated_devices_of",
]

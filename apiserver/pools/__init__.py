"""Pools: the one truth pool status, the live pool view and the allocator read.

``gather`` makes a pool out of its slices (``SliceView``) and devices (``DeviceFacts``, from
the device view): newest generation only, complete or not, valid or not and why, counter
sets; ``GatheredPool.occupancy`` says which devices are taken, unavailable or free given the
devices allocations and reservations hold. ``PoolIndex`` keeps every pool current from the
device view, the slices and the claims, with the devices DeviceReservations hold
(``HeldReservations``, the one owner of held devices: held counts as allocated), summarizes a
pool on demand (``PoolSummary``, a ResourcePoolStatusRequest's pool entry) and hands the
allocator a ``Pools`` snapshot, whose ``reachable(node)`` lists the devices a node reaches.
``LivePools`` keeps one ResourcePool object per pool current from the index's changes and
serves them as a readable store (the computed ResourcePool kind).
"""

from .gather import (
    BLOCKING_EFFECTS,
    DeviceFacts,
    GatheredPool,
    Occupancy,
    PoolKey,
    device_facts,
    fits,
    gather,
)
from .index import PoolIndex, PoolListener
from .live import LivePools
from .nodes import Node, reaches, selector_matches
from .reserved import HeldReservations, ReservationListener, lapsed, now_utc
from .snapshot import Pools, PoolState, Reach, pools_from
from .summary import PoolSummary, clip, summarize, summary_of

__all__ = [
    "BLOCKING_EFFECTS",
    "DeviceFacts",
    "GatheredPool",
    "HeldReservations",
    "LivePools",
    "Node",
    "Occupancy",
    "PoolIndex",
    "PoolKey",
    "PoolListener",
    "PoolState",
    "PoolSummary",
    "Pools",
    "Reach",
    "ReservationListener",
    "clip",
    "device_facts",
    "fits",
    "gather",
    "lapsed",
    "now_utc",
    "pools_from",
    "reaches",
    "selector_matches",
    "summarize",
    "summary_of",
]

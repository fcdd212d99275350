"""What one pool offers: the counts of a ResourcePoolStatusRequest's pool entry (KEP-5677).

``summarize`` reads a ``GatheredPool`` (see ``gather``: newest generation only, devices by
name, counter sets, problems) and the names of the devices allocations and reservations
hold, and counts as ``GatheredPool.occupancy`` classifies — the same classification the
allocator starts from, so the two never disagree on what is free:

* ``totalDevices``: distinct device names in the newest generation's slices;
* ``allocatedDevices``: those named by a ResourceClaim's ``status.allocation.devices.results``
  (admin-access results excepted, as upstream) or held by a reservation; a device that
  allows multiple allocations counts once, as allocated, as soon as one claim holds a share
  of it (upstream's ``IsDeviceAllocated`` counts a partly consumed device as allocated), however
  much of its capacity is left;
* ``unavailableDevices``: devices not allocated that cannot be allocated now — a taint with
  effect ``NoSchedule`` or ``NoExecute``, or a counter the device consumes that the
  allocated devices of the pool have already used up (partitionable devices: a whole GPU
  once a half is allocated, and the halves once the whole is), or a counter set or counter
  the pool does not define;
* ``availableDevices`` = total - allocated - unavailable;
* ``nodeName``: the node when every placement in the pool names the same node.

Problems become validation errors (at most 256 characters each) and never stop the count.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from ..api.resource import VALIDATION_ERROR_MAX_LENGTH, SliceView
from ..toolkit import JSON
from .gather import DeviceFacts, GatheredPool, gather


@dataclass(frozen=True, slots=True)
class PoolSummary:
    driver: str
    pool: str
    node_name: str | None
    generation: int
    slice_count: int
    total: int
    allocated: int
    unavailable: int
    errors: tuple[str, ...] = ()
    incomplete: bool = False

    @property
    def available(self) -> int:
        return self.total - self.allocated - self.unavailable

    def entry(self) -> JSON:
        """The pool's ``status.pools[]`` entry."""
        out: JSON = {"driver": self.driver, "poolName": self.pool}
        if self.node_name is not None:
            out["nodeName"] = self.node_name
        out.update(
            totalDevices=self.total,
            allocatedDevices=self.allocated,
            availableDevices=self.available,
            unavailableDevices=self.unavailable,
            sliceCount=self.slice_count,
            generation=self.generation,
        )
        return out


def clip(message: str, limit: int = VALIDATION_ERROR_MAX_LENGTH) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


def summary_of(gathered: GatheredPool, taken: Collection[str]) -> PoolSummary:
    """The pool's counts and problems, given the names of the devices held."""
    occupancy = gathered.occupancy(taken)
    return PoolSummary(
        driver=gathered.driver,
        pool=gathered.pool,
        node_name=gathered.node_name,
        generation=gathered.generation,
        slice_count=len(gathered.slices),
        total=len(gathered.devices),
        allocated=len(occupancy.taken),
        unavailable=len(occupancy.tainted) + len(occupancy.exhausted),
        errors=tuple(clip(f"pool {gathered.pool}: {p}") for p in gathered.problems),
        incomplete=gathered.incomplete,
    )


def summarize(
    driver: str,
    pool: str,
    slices: Iterable[SliceView],
    devices: Iterable[DeviceFacts],
    allocated: Collection[str],
) -> PoolSummary:
    """The pool's counts and problems, from the views of its slices, the facts of its
    devices and the names of its allocated devices."""
    return summary_of(gather(driver, pool, slices, devices), allocated)

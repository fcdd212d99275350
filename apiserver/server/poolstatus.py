"""ResourcePoolStatusRequests answered by the server (KEP-5677): the pool index over the
device view and the cluster's claims, the controller and the TTL cleanup.

It reuses the cluster's sources and the device view (the KEP's "reuse existing
informers"), so it is started after the device view's service. Readiness: ``pool-status``
(the index has absorbed the view's devices), so ``/readyz`` does not claim ready before
requests can be answered.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from ..controllers import (
    PoolIndex,
    PoolStatusMetrics,
    PoolStatusRequestController,
    RequestCleaner,
)
from ..kinds.resourcepoolstatusrequest import ResourcePoolStatusRequestStrategy
from ..pools import HeldReservations
from ..toolkit.options import non_negative, option, toggle
from .cluster import COMPONENT, Cluster
from .deviceview import DeviceViewService


@dataclass
class PoolStatusOptions:
    enabled: bool = toggle(
        "--pool-status",
        True,
        "answer ResourcePoolStatusRequests (KEP-5677) and delete them when their time to"
        " live is over",
    )
    ttl: float = option(
        "--pool-status-ttl",
        3600.0,
        "seconds a completed ResourcePoolStatusRequest is kept unless its"
        " spec.ttlSecondsAfterComplete says otherwise",
        check=non_negative,
    )
    pending_ttl: float = option(
        "--pool-status-pending-ttl",
        24 * 3600.0,
        "seconds a ResourcePoolStatusRequest that never completed is kept",
        check=non_negative,
    )
    create_rate: float = option(
        "--pool-status-create-rate",
        0.2,
        "ResourcePoolStatusRequests each user may create per second; beyond it (and the"
        " burst) a create is refused with 429 and Retry-After; 0 for no limit",
        check=non_negative,
    )
    create_burst: int = option(
        "--pool-status-create-burst",
        10,
        "ResourcePoolStatusRequests a user may create at once before the rate applies",
        check=non_negative,
    )
    rate: float = 20.0
    """Requests processed per second, at most (the work queue's token bucket)."""
    burst: int = 100
    freeze_gc: bool = True
    """Freeze what the start-up made out of the cyclic collector's sight (see ``PoolIndex``)."""


class PoolStatusService:
    def __init__(
        self,
        cluster: Cluster,
        group: str,
        devices: DeviceViewService,
        options: PoolStatusOptions | None = None,
        metrics: CollectorRegistry | None = None,
        reservations: HeldReservations | None = None,
    ) -> None:
        """``reservations``: what DeviceReservations hold (counted as allocated)."""
        options = options or PoolStatusOptions()
        sources = cluster.sources
        self.index = PoolIndex(
            devices.view,
            sources.slices,
            sources.claims,
            reservations=reservations,
            freeze_gc=options.freeze_gc,
        )
        registry = cluster.registry(ResourcePoolStatusRequestStrategy.for_group(group).resource)
        self.controller = PoolStatusRequestController(
            self.index,
            sources.requests,
            registry,
            PoolStatusMetrics(metrics),
            component=COMPONENT,
            rate=options.rate,
            burst=options.burst,
        )
        self.cleaner = RequestCleaner(
            sources.requests, registry, ttl=options.ttl, pending_ttl=options.pending_ttl
        )

    async def start(self) -> None:
        await self.index.start()
        await self.controller.start()
        await self.cleaner.start()

    async def close(self) -> None:
        await self.cleaner.close()
        await self.controller.close()
        await self.index.close()

    def readiness(self) -> dict[str, bool]:
        return {"pool-status": self.index.has_synced}

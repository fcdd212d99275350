"""ResourcePoolStatusRequests answered by the server (KEP-5677): the claim and request
sources, the pool index over the device view, the controller and the TTL cleanup.

It reuses the device view's slice source and view (the KEP's "reuse existing informers"),
so it is started after the device view's service. Readiness: ``informer-resourceclaims``,
``informer-resourcepoolstatusrequests`` and ``pool-status`` (the index has absorbed the
view's devices), so ``/readyz`` does not claim ready before requests can be answered.
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
from ..kinds.resourceclaim import ResourceClaimStrategy
from ..kinds.resourcepoolstatusrequest import ResourcePoolStatusRequestStrategy
from ..machinery.registry import Registry
from ..sources import StoreSource
from ..storage import Store
from .deviceview import COMPONENT, DeviceViewService


@dataclass
class PoolStatusOptions:
    ttl: float = 3600.0
    """Seconds a completed request is kept, unless its spec.ttlSecondsAfterComplete says."""
    pending_ttl: float = 24 * 3600.0
    """Seconds a request that never completed is kept."""
    rate: float = 20.0
    """Requests processed per second, at most (the work queue's token bucket)."""
    burst: int = 100
    freeze_gc: bool = True
    """Freeze what the start-up made out of the cyclic collector's sight (see ``PoolIndex``)."""


class PoolStatusService:
    def __init__(
        self,
        store: Store,
        group: str,
        devices: DeviceViewService,
        options: PoolStatusOptions | None = None,
        metrics: CollectorRegistry | None = None,
    ) -> None:
        options = options or PoolStatusOptions()
        strategy = ResourcePoolStatusRequestStrategy.for_group(group)
        self.claims = StoreSource(
            store, ResourceClaimStrategy.upstream().resource.key_prefix(), name="resourceclaims"
        )
        self.requests = StoreSource(
            store, strategy.resource.key_prefix(), name="resourcepoolstatusrequests"
        )
        self.index = PoolIndex(
            devices.view, devices.slices, self.claims, freeze_gc=options.freeze_gc
        )
        registry = Registry(strategy, store)
        self.controller = PoolStatusRequestController(
            self.index,
            self.requests,
            registry,
            PoolStatusMetrics(metrics),
            component=COMPONENT,
            rate=options.rate,
            burst=options.burst,
        )
        self.cleaner = RequestCleaner(
            self.requests, registry, ttl=options.ttl, pending_ttl=options.pending_ttl
        )

    async def start(self) -> None:
        await self.claims.start()
        await self.requests.start()
        await self.index.start()
        await self.controller.start()
        await self.cleaner.start()

    async def close(self) -> None:
        await self.cleaner.close()
        await self.controller.close()
        await self.index.close()
        await self.requests.close()
        await self.claims.close()

    def readiness(self) -> dict[str, bool]:
        return {
            f"informer-{self.claims.name}": self.claims.has_synced,
            f"informer-{self.requests.name}": self.requests.has_synced,
            "pool-status": self.index.has_synced,
        }

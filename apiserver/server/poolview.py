"""The live pool view as a part of the server: the computed ResourcePool kind over the pool
index that pool status and the allocator read.

Readiness: ``pool-view`` (its first full build is done), so ``/readyz`` answers 503 until
the kind can serve.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..kinds.resourcepool import ResourcePoolStrategy
from ..machinery import ComputedResource, Resource
from ..pools import LivePools, PoolIndex
from ..storage.window import WATCH_WINDOW
from ..toolkit.options import non_negative, option
from .poolmetrics import MAX_POOLS_DEFAULT


@dataclass
class PoolViewOptions:
    """The live pools: the ResourcePool kind's event window, and how many pools /metrics
    names one by one."""

    metrics_max_pools: int = option(
        "--metrics-max-pools",
        MAX_POOLS_DEFAULT,
        "pools whose availability /metrics exports one by one; with more, only the"
        " per-driver totals",
        check=non_negative,
    )
    window: int = WATCH_WINDOW
    """Events of the ResourcePool resource kept for watches (and its watchers' queue bound);
    the server sets it from ``--watch-history``."""
    window_bytes: int = 0
    """The most bytes those events may take (0: no bound but the count)."""


class PoolViewService:
    def __init__(
        self, index: PoolIndex, group: str, options: PoolViewOptions | None = None
    ) -> None:
        options = options or PoolViewOptions()
        self.strategy = ResourcePoolStrategy.for_group(group)
        self.pools = LivePools(
            index,
            self.strategy.resource,
            window=options.window,
            window_bytes=options.window_bytes,
        )

    def served(self) -> list[Resource]:
        """The computed ResourcePool kind, read from the live view rather than from a store."""
        return [ComputedResource(self.strategy, self.pools.store)]

    async def start(self) -> None:
        await self.pools.start()

    async def close(self) -> None:
        await self.pools.close()

    def readiness(self) -> dict[str, bool]:
        return {"pool-view": self.pools.has_synced}

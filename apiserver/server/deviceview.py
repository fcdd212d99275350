"""The device view as a part of the server: the view over the cluster's sources, the
computed Device resource's store and the patch status controller, started and stopped
together.

The sources and the registries come from the ``Cluster`` (standalone or aggregated alike);
where the cluster has DeviceTaintRules they join the patches.
Readiness: ``device-view`` (the first full build is done), so ``/readyz`` answers 503 until
the view can serve.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..controllers import PatchStatusController
from ..devices import DeviceStore, DeviceView, PatchesAndRules
from ..kinds.device import DeviceStrategy
from ..kinds.resourceslicepatch import ResourceSlicePatchStrategy
from ..machinery import ComputedResource, Resource
from ..sources import Source
from ..storage.window import WATCH_WINDOW
from ..toolkit.options import non_negative, option, toggle
from .cluster import COMPONENT, Cluster


@dataclass
class DeviceViewOptions:
    patch_status: bool = toggle(
        "--patch-status",
        True,
        "write each ResourceSlicePatch's status (matched devices, SelectorsValid) and"
        " warning Events about faulty selectors",
    )
    status_interval: float = option(
        "--patch-status-interval",
        1.0,
        "at most one status write (and Event round) per ResourceSlicePatch in this many seconds",
        check=non_negative,
    )
    window: int = WATCH_WINDOW
    """Events of the Device resource kept for watches (and its watchers' queue bound); the
    server sets it from ``--watch-history``."""
    window_bytes: int = 0
    """The most bytes those events may take (0: no bound but the count)."""
    pause_gc: bool = True
    """Build with the cyclic garbage collector paused, then freeze (see ``DeviceView``)."""


class DeviceViewService:
    def __init__(
        self, cluster: Cluster, group: str, options: DeviceViewOptions | None = None
    ) -> None:
        options = options or DeviceViewOptions()
        sources = cluster.sources
        self.slices = sources.slices
        # DeviceTaintRules reach the view as patches that only add a taint.
        patches: Source = sources.patches
        if sources.taint_rules is not None:
            patches = PatchesAndRules(sources.patches, sources.taint_rules)
        self.view = DeviceView(sources.slices, sources.classes, patches, pause_gc=options.pause_gc)
        self.strategy = DeviceStrategy.for_group(group)
        self.store = DeviceStore(
            self.strategy.resource,
            window=options.window,
            window_bytes=options.window_bytes,
            max_pending=options.window,
        )
        self.view.subscribe(self.store)
        self.controller: PatchStatusController | None = None
        if options.patch_status:
            patch_kind = ResourceSlicePatchStrategy.for_group(group).resource
            self.controller = PatchStatusController(
                self.view,
                sources.patches,
                cluster.registry(patch_kind),
                cluster.events,
                component=COMPONENT,
                interval=options.status_interval,
            )

    def served(self) -> list[Resource]:
        """The computed Device kind, read from the view rather than from a store."""
        return [ComputedResource(self.strategy, self.store)]

    async def start(self) -> None:
        await self.view.start()
        if self.controller is not None:
            await self.controller.start()

    async def close(self) -> None:
        if self.controller is not None:
            await self.controller.close()
        await self.view.close()
        await self.store.close()

    def readiness(self) -> dict[str, bool]:
        return {"device-view": self.view.has_synced}

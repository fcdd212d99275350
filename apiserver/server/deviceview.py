"""The device view as a part of the server: its sources, the view, the computed Device
resource's store and the patch status controller, started and stopped together.

Standalone mode: the sources read our own store. Readiness: one check per source
(``informer-<resource>``) and ``device-view`` (the first full build is done), so ``/readyz``
answers 503 until the view can serve.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..controllers import PatchStatusController, RegistryEventRecorder
from ..devices import DeviceStore, DeviceView
from ..kinds.device import DeviceStrategy
from ..kinds.deviceclass import DeviceClassStrategy
from ..kinds.event import EventStrategy
from ..kinds.resourceslice import ResourceSliceStrategy
from ..kinds.resourceslicepatch import ResourceSlicePatchStrategy
from ..machinery.registry import Registry
from ..machinery.resource import ResourceType
from ..sources import StoreSource
from ..storage import Store

COMPONENT = "dra-apiserver"


@dataclass
class DeviceViewOptions:
    window: int = 10_000
    """Events of the Device resource kept for watches (and its watchers' queue bound)."""
    window_bytes: int = 0
    """The most bytes those events may take (0: no bound but the count)."""
    patch_status: bool = True
    """Write ResourceSlicePatch status and warning Events about faulty selectors."""
    status_interval: float = 1.0
    """At most one status write (and Event round) per patch in this many seconds."""
    pause_gc: bool = True
    """Build with the cyclic garbage collector paused, then freeze (see ``DeviceView``)."""


class DeviceViewService:
    def __init__(self, store: Store, group: str, options: DeviceViewOptions | None = None) -> None:
        options = options or DeviceViewOptions()
        patch_strategy = ResourceSlicePatchStrategy.for_group(group)
        self.slices = StoreSource(
            store,
            ResourceSliceStrategy.upstream().resource.key_prefix(),
            name="resourceslices",
        )
        self.classes = StoreSource(
            store, DeviceClassStrategy.upstream().resource.key_prefix(), name="deviceclasses"
        )
        self.patches = StoreSource(
            store, patch_strategy.resource.key_prefix(), name="resourceslicepatches"
        )
        self.view = DeviceView(self.slices, self.classes, self.patches, pause_gc=options.pause_gc)
        self.resource = DeviceStrategy.for_group(group).resource
        self.store = DeviceStore(
            self.resource,
            window=options.window,
            window_bytes=options.window_bytes,
            max_pending=options.window,
        )
        self.view.subscribe(self.store)
        self.controller: PatchStatusController | None = None
        if options.patch_status:
            events = RegistryEventRecorder(Registry(EventStrategy.core(), store), COMPONENT)
            self.controller = PatchStatusController(
                self.view,
                self.patches,
                Registry(patch_strategy, store),
                events,
                component=COMPONENT,
                interval=options.status_interval,
            )

    def stores(self) -> dict[ResourceType, Store]:
        """The resources served from the view rather than from the main store."""
        return {self.resource: self.store}

    async def start(self) -> None:
        for source in (self.slices, self.classes, self.patches):
            await source.start()
        await self.view.start()
        if self.controller is not None:
            await self.controller.start()

    async def close(self) -> None:
        if self.controller is not None:
            await self.controller.close()
        await self.view.close()
        for source in (self.patches, self.classes, self.slices):
            await source.close()
        await self.store.close()

    def readiness(self) -> dict[str, bool]:
        checks = {
            f"informer-{s.name}": s.has_synced for s in (self.slices, self.classes, self.patches)
        }
        checks["device-view"] = self.view.has_synced
        return checks

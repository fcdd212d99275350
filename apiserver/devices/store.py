"""The device view as a readable store, so the computed Device kind is served like any other.

A ``DeviceListener`` of the view over a ``ComputedStore``: each device state is kept under
its object's key with the revision of the commit that last changed it (all devices carry
the view's revision at sync); the generic store serves get, list and watch at recent
revisions, 410 before its window and 503 until the view has synced. Objects are built when
read (a few microseconds each) rather than kept, so the computed resource costs no memory
beyond the view itself and the event window. The driver, pool and device name are indexed,
so a list that pins them (the shim's look-up of one allocated device) builds only the
objects it may return, not every device.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..machinery import ResourceType
from ..storage.computed import ComputedStore
from ..storage.window import WATCH_WINDOW
from .objects import device_object
from .state import Commit, DeviceState

INDEXES: dict[str, Callable[[DeviceState], str]] = {
    "spec.driver": lambda state: state.driver,
    "spec.pool.name": lambda state: state.pool_name,
    "spec.device": lambda state: state.device_name,
}
"""The fields a device is found by, read from its state as its object shows them."""


class DeviceStore(ComputedStore[DeviceState]):
    def __init__(
        self,
        resource: ResourceType,
        *,
        window: int = WATCH_WINDOW,
        window_bytes: int = 0,
        max_pending: int = WATCH_WINDOW,
    ) -> None:
        api_version = resource.group_version
        super().__init__(
            lambda state, revision: device_object(state, api_version, revision),
            what="the device view",
            window=window,
            window_bytes=window_bytes,
            max_pending=max_pending,
            indexes=INDEXES,
        )
        self.resource = resource
        self.api_version = api_version

    def _key(self, state: DeviceState) -> str:
        return self.resource.key(None, state.name)

    # -- DeviceListener --------------------------------------------------------------

    def reset(self, states: Iterable[DeviceState], revision: int) -> None:
        self.replace_all(((self._key(s), s) for s in states), revision)

    def apply(self, commit: Commit) -> None:
        changes = []
        for change in commit.changes:
            state = change.new or change.old
            assert state is not None
            changes.append((self._key(state), change.new))
        self.commit(commit.revision, changes)

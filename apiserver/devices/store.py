"""The device view as a readable store, so the computed Device kind is served like any other.

List, get and watch come from the view's commits: each device is kept with the revision
of the commit that last changed it (all devices carry the view's revision at sync), and a
bounded window of recent events serves watches and lists at a recent revision (rolled
back from the current state). Older revisions are gone (410, clients list again). It has no
writes: the Device kind is served for get, list and watch only. Until the view has synced
every read is unavailable (503), like a store that is still starting.

Objects are built when read (a few microseconds each) rather than kept, so the computed
resource costs no memory beyond the view itself and the event window.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import AsyncIterator, Iterable, Iterator

import orjson

from ..machinery.resource import ResourceType
from ..storage import (
    EventType,
    ListPage,
    RevisionCompactedError,
    StorageUnavailableError,
    StoredObject,
    WatchEvent,
    prefix_end,
)
from ..storage.fanout import Fanout, FollowingWatch
from ..storage.window import EventWindow, SortedMap
from .objects import device_object
from .state import Commit, DeviceState

PACE_ITEMS = 500
"""A list yields to the event loop after building this many objects."""


class DeviceStore:
    def __init__(
        self,
        resource: ResourceType,
        *,
        window: int = 10_000,
        window_bytes: int = 0,
        max_pending: int = 10_000,
    ) -> None:
        self.resource = resource
        self.api_version = resource.group_version
        self._states: SortedMap[tuple[DeviceState, int]] = SortedMap()
        self._window = EventWindow(window, max_bytes=window_bytes)
        self._fanout = Fanout(max_pending=max_pending)
        self._revision = 0
        self._synced = False

    # -- DeviceListener --------------------------------------------------------------

    def reset(self, states: Iterable[DeviceState], revision: int) -> None:
        self._states = SortedMap({self._key(s): (s, revision) for s in states})
        self._window.reset(revision)
        self._revision = revision
        self._fanout.revision = revision
        self._synced = True

    def apply(self, commit: Commit) -> None:
        revision = commit.revision
        events = []
        for change in commit.changes:
            state = change.new or change.old
            assert state is not None
            key = self._key(state)
            current = self._states.get(key)
            prev = self._stored(key, *current) if current is not None else None
            if change.new is None:
                if current is None:
                    continue
                self._states.pop(key)
                gone = self._stored(key, current[0], revision)
                events.append(WatchEvent(EventType.DELETED, gone, prev))
                continue
            self._states.put(key, (change.new, revision))
            stored = self._stored(key, change.new, revision)
            if current is None:
                events.append(WatchEvent(EventType.ADDED, stored))
            else:
                events.append(WatchEvent(EventType.MODIFIED, stored, prev))
        self._revision = revision
        self._window.extend(events)  # whole commits are dropped, oldest first
        for event in events:
            self._fanout.publish(event)

    # -- helpers -------------------------------------------------------------------------

    def _key(self, state: DeviceState) -> str:
        return self.resource.key(None, state.name)

    def _stored(self, key: str, state: DeviceState, revision: int) -> StoredObject:
        obj = device_object(state, self.api_version, revision)
        return StoredObject(key, revision, orjson.dumps(obj), obj)

    def _check_ready(self) -> None:
        if not self._synced:
            raise StorageUnavailableError("", "the device view has not synced yet")

    def _rollback(self, revision: int) -> dict[str, StoredObject | None]:
        """For each key changed after ``revision``: its object at ``revision`` (or None)."""
        before: dict[str, StoredObject | None] = {}
        for event in reversed(self._window.after(revision)):
            before[event.object.key] = None if event.type is EventType.ADDED else event.prev
        return before

    def _keys(self, prefix: str, start: str, extra: Iterable[str]) -> Iterator[str]:
        current, _ = self._states.page(prefix, start, 0)
        first = max(prefix, start)
        end = prefix_end(prefix)
        others = sorted(k for k in extra if k not in self._states and first <= k < end)
        previous = None
        for key in heapq.merge(current, others):
            if key != previous:
                previous = key
                yield key

    # -- Store -----------------------------------------------------------------------

    async def start(self) -> None:
        """Nothing to start: the view feeds this store."""

    async def close(self) -> None:
        self._fanout.close_all()

    @property
    def revision(self) -> int:
        return self._revision

    @property
    def compacted_revision(self) -> int:
        return self._window.start

    async def current_revision(self) -> int:
        return self._revision

    def readiness(self) -> dict[str, bool]:
        return {}

    async def get(self, key: str) -> StoredObject | None:
        self._check_ready()
        found = self._states.get(key)
        return self._stored(key, *found) if found is not None else None

    async def list(
        self, prefix: str, *, revision: int | None = None, start: str = "", limit: int = 0
    ) -> ListPage:
        self._check_ready()
        at = self._revision
        before: dict[str, StoredObject | None] = {}
        if revision is not None and revision < at:
            if revision < self._window.start:
                raise RevisionCompactedError(revision, self._window.start)
            before = self._rollback(revision)
            at = revision
        # Pick the entries in one go (no yielding, so from one state), then build them.
        picked: list[StoredObject | tuple[str, DeviceState, int]] = []
        more = False
        for key in self._keys(prefix, start, before):
            if key in before:
                item = before[key]
                if item is None:
                    continue
                picked.append(item)
            else:
                picked.append((key, *self._states[key]))
            if limit and len(picked) > limit:
                picked.pop()
                more = True
                break
        items = []
        for n, entry in enumerate(picked, 1):
            items.append(entry if isinstance(entry, StoredObject) else self._stored(*entry))
            if n % PACE_ITEMS == 0:
                await asyncio.sleep(0)
        return ListPage(items, at, more)

    def watch(self, prefix: str, revision: int) -> _DeviceWatch:
        return _DeviceWatch(self, prefix, revision)


class _DeviceWatch(FollowingWatch):
    def __init__(self, store: DeviceStore, prefix: str, revision: int) -> None:
        super().__init__(revision)
        self._store = store
        self._prefix = prefix
        self._revision = revision

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[WatchEvent]:
        store = self._store
        store._check_ready()
        if self._revision < store.compacted_revision:
            raise RevisionCompactedError(self._revision, store.compacted_revision)
        # The backlog and the subscription are taken together: no event falls between.
        backlog = [
            e for e in store._window.after(self._revision) if e.object.key.startswith(self._prefix)
        ]
        sub = store._fanout.subscribe(self._prefix, prefix_end(self._prefix))
        async for event in self._replay_then_follow(backlog, sub):
            yield event

    def _head(self) -> int:
        return self._store.revision

"""A readable store over values a view computes, so a computed kind is served like any other.

The owner (the device view's listener, the live pool view) says what each key holds: the
whole state once (``replace_all``), then changes in revision order (``commit``, a value or
None for a key that is gone). Each value is kept with the revision that last changed it;
objects are built from it when read (``build``), so the store costs no memory beyond the
values and a bounded window of recent events. That window serves watches and lists at a
recent revision (rolled back from the current state); older revisions are gone (410,
clients list again). There are no writes. Until the first ``replace_all`` every read is
unavailable (503), like a store that is still starting.

``indexes`` name fields (as field selectors name them) with how to read each from a value:
``indexed`` answers the keys whose values have given fields at given values from those
indexes, so a list that pins such a field builds only the objects it may return.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import orjson

from .errors import RevisionCompactedError, StorageUnavailableError
from .fanout import Fanout, FollowingWatch
from .interface import EventType, ListPage, StoredObject, WatchEvent, prefix_end
from .window import WATCH_WINDOW, EventWindow, SortedMap

V = TypeVar("V")
PACE_ITEMS = 500
"""A list yields to the event loop after building this many objects."""


class ComputedStore(Generic[V]):
    def __init__(
        self,
        build: Callable[[V, int], dict[str, Any]],
        *,
        what: str,
        window: int = WATCH_WINDOW,
        window_bytes: int = 0,
        max_pending: int = WATCH_WINDOW,
        indexes: Mapping[str, Callable[[V], str]] | None = None,
    ) -> None:
        """``build(value, revision)``: the object served for a value last changed at
        ``revision``; ``what`` names the view in the 503 before it has synced;
        ``indexes``: field name -> its value in a value (see ``indexed``)."""
        self._build = build
        self._indexes = dict(indexes or {})
        self._index: dict[str, dict[str, set[str]]] = {f: {} for f in self._indexes}
        self._what = what
        self._values: SortedMap[tuple[V, int]] = SortedMap()
        self._window = EventWindow(window, max_bytes=window_bytes)
        self._fanout = Fanout(max_pending=max_pending)
        self._revision = 0
        self._synced = False

    # -- what the owner tells it -----------------------------------------------------

    def replace_all(self, values: Iterable[tuple[str, V]], revision: int) -> None:
        """Every key's value at ``revision``; history before it is gone."""
        given = {key: (value, revision) for key, value in values}
        self._values = SortedMap(given)
        self._index = {f: {} for f in self._indexes}
        for key, (value, _) in given.items():
            self._add_to_index(key, value)
        self._window.reset(revision)
        self._revision = revision
        self._fanout.revision = revision
        self._synced = True

    def commit(self, revision: int, changes: Iterable[tuple[str, V | None]]) -> None:
        """Keys changed at ``revision`` (a value, or None: the key is gone), published as
        one revision's events."""
        events = []
        for key, value in changes:
            current = self._values.get(key)
            prev = self._stored(key, *current) if current is not None else None
            if current is not None:
                self._drop_from_index(key, current[0])
            if value is not None:
                self._add_to_index(key, value)
            if value is None:
                if current is None:
                    continue
                self._values.pop(key)
                gone = self._stored(key, current[0], revision)
                events.append(WatchEvent(EventType.DELETED, gone, prev))
                continue
            self._values.put(key, (value, revision))
            stored = self._stored(key, value, revision)
            kind = EventType.ADDED if current is None else EventType.MODIFIED
            events.append(WatchEvent(kind, stored, prev))
        self._revision = max(self._revision, revision)
        self._window.extend(events)  # whole revisions are dropped, oldest first
        for event in events:
            self._fanout.publish(event)

    def value(self, key: str) -> V | None:
        found = self._values.get(key)
        return found[0] if found is not None else None

    @property
    def synced(self) -> bool:
        return self._synced

    # -- indexes ---------------------------------------------------------------------

    @property
    def indexed_fields(self) -> tuple[str, ...]:
        return tuple(self._indexes)

    def indexed(self, pinned: Mapping[str, str]) -> list[str] | None:
        """The keys, sorted, whose values have each indexed field of ``pinned`` at its
        value (fields not indexed are ignored: the caller still matches every object);
        None when no indexed field is pinned."""
        self._check_ready()
        sets = [self._index[f].get(value, set()) for f, value in pinned.items() if f in self._index]
        if not sets:
            return None
        sets.sort(key=len)
        found = set(sets[0])
        for other in sets[1:]:
            found &= other
        return sorted(found)

    def _add_to_index(self, key: str, value: V) -> None:
        for name, read in self._indexes.items():
            self._index[name].setdefault(read(value), set()).add(key)

    def _drop_from_index(self, key: str, value: V) -> None:
        for name, read in self._indexes.items():
            keys = self._index[name].get(read(value))
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._index[name][read(value)]

    # -- helpers -------------------------------------------------------------------------

    def _stored(self, key: str, value: V, revision: int) -> StoredObject:
        obj = self._build(value, revision)
        return StoredObject(key, revision, orjson.dumps(obj), obj)

    def _check_ready(self) -> None:
        if not self._synced:
            raise StorageUnavailableError("", f"{self._what} has not synced yet")

    def _rollback(self, revision: int) -> dict[str, StoredObject | None]:
        """For each key changed after ``revision``: its object at ``revision`` (or None)."""
        before: dict[str, StoredObject | None] = {}
        for event in reversed(self._window.after(revision)):
            before[event.object.key] = None if event.type is EventType.ADDED else event.prev
        return before

    def _keys(self, prefix: str, start: str, extra: Iterable[str]) -> Iterator[str]:
        current, _ = self._values.page(prefix, start, 0)
        first = max(prefix, start)
        end = prefix_end(prefix)
        others = sorted(k for k in extra if k not in self._values and first <= k < end)
        previous = None
        for key in heapq.merge(current, others):
            if key != previous:
                previous = key
                yield key

    # -- ReadableStore -------------------------------------------------------------------

    async def start(self) -> None:
        """Nothing to start: its owner feeds it."""

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
        found = self._values.get(key)
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
        picked: list[StoredObject | tuple[str, V, int]] = []
        more = False
        for key in self._keys(prefix, start, before):
            if key in before:
                item = before[key]
                if item is None:
                    continue
                picked.append(item)
            else:
                picked.append((key, *self._values[key]))
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

    def watch(self, prefix: str, revision: int) -> ComputedWatch:
        return ComputedWatch(self, prefix, revision)


class ComputedWatch(FollowingWatch):
    def __init__(self, store: ComputedStore[Any], prefix: str, revision: int) -> None:
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

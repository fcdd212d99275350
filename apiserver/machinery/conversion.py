"""Serving a kind in a version other than the one it is stored in.

Kubernetes stores each group-resource once, in its storage version, and converts at the
edge: a request in another served version is decoded, converted (through the internal
hub) and written in the storage version; what is read is converted back into the version
the client asked for. Here the edge is the store a served version's registry writes
through: ``ConvertingStore`` wraps the one store of the kind, converts every object going
in to the storage version and every object coming out (gets, lists, watch events, write
results) to the served version. Above it the registry is the ordinary one, with the
served version's strategy: validation, defaults, patches, server-side apply, Tables and
field selectors all work on the served version, so errors name the fields the client
sent. Keys and revisions are the store's: an object written in one version is read in
the other at the same resourceVersion, and one watch sees the writes of both.

A kind provides only the two functions (``Conversion``); whatever one version cannot say
is the kind's to keep (an annotation) or to name as lost, in its module docstring.

Not converted (simpler than Kubernetes, which converts them too): managed fields keep the
version of the write that recorded them, so a field whose name differs between versions
loses its owner when the object is next written through the other version; and field
selectors are the served version's own (a kind gives each version the fields it selects on).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

import orjson

from ..storage import ListPage, Store, StoredObject, Watch, WatchEvent
from ..toolkit import JSON
from .resource import ResourceType

CACHE_BYTES = 16 * 1024 * 1024
"""The most bytes of converted objects a ``ConvertingStore`` keeps for the next reader."""
_Objects = list[StoredObject]
"""(Named here: inside the store class, ``list`` is its method.)"""


@dataclass(frozen=True)
class Conversion:
    """How a served version of a kind maps onto its storage version: two pure functions
    over objects (dicts, not mutated), each returning the body of the other version. The
    machinery sets ``apiVersion``; ``metadata`` is the kind's to carry over."""

    stored_version: str
    to_stored: Callable[[JSON], JSON]
    from_stored: Callable[[JSON], JSON]


class ConvertingStore:
    """``store`` as the served version of ``resource`` sees it: objects under the
    resource's keys are converted in and out; other keys a write names with them (the
    exclusive keys of a kind) pass through unchanged.

    An object at a revision never changes, so its converted form is kept (least recently
    used first out, at most ``cache_bytes``): the readers of one object, the watchers of one
    event, convert it once."""

    def __init__(
        self,
        store: Store,
        resource: ResourceType,
        conversion: Conversion,
        *,
        cache_bytes: int = CACHE_BYTES,
    ) -> None:
        self.backend = store
        self.cache_bytes = cache_bytes
        self._converted: OrderedDict[tuple[str, int], StoredObject] = OrderedDict()
        self._cached_bytes = 0
        self.prefix = resource.key_prefix()
        self.conversion = conversion
        self.served_version = resource.group_version
        group = resource.group
        stored = conversion.stored_version
        self.stored_version = f"{group}/{stored}" if group else stored

    # -- conversion ----------------------------------------------------------------

    def _ours(self, key: str) -> bool:
        return key.startswith(self.prefix)

    def _in(self, key: str, obj: JSON) -> JSON:
        if not self._ours(key):
            return obj
        stored = self.conversion.to_stored(obj)
        stored["apiVersion"] = self.stored_version
        return stored

    def _out(self, stored: StoredObject) -> StoredObject:
        if not self._ours(stored.key):
            return stored
        at = (stored.key, stored.revision)
        cached = self._converted.get(at)
        if cached is not None:
            self._converted.move_to_end(at)
            return cached
        served = self.conversion.from_stored(stored.obj)
        served["apiVersion"] = self.served_version
        out = StoredObject(stored.key, stored.revision, orjson.dumps(served), served)
        if stored.revision > 0 and len(out.raw) <= self.cache_bytes:
            self._converted[at] = out
            self._cached_bytes += len(out.raw)
            while self._cached_bytes > self.cache_bytes:
                _, dropped = self._converted.popitem(last=False)
                self._cached_bytes -= len(dropped.raw)
        return out

    def _out_event(self, event: WatchEvent) -> WatchEvent:
        prev = self._out(event.prev) if event.prev is not None else None
        return WatchEvent(event.type, self._out(event.object), prev)

    # -- reads -----------------------------------------------------------------------

    async def start(self) -> None:
        """The backend is started (and closed) by its owner, not by a view of it."""

    async def close(self) -> None:
        """See ``start``."""

    @property
    def revision(self) -> int:
        return self.backend.revision

    @property
    def compacted_revision(self) -> int:
        return self.backend.compacted_revision

    async def current_revision(self) -> int:
        return await self.backend.current_revision()

    def readiness(self) -> dict[str, bool]:
        return {}

    async def get(self, key: str) -> StoredObject | None:
        stored = await self.backend.get(key)
        return self._out(stored) if stored is not None else None

    async def list(
        self, prefix: str, *, revision: int | None = None, start: str = "", limit: int = 0
    ) -> ListPage:
        page = await self.backend.list(prefix, revision=revision, start=start, limit=limit)
        return ListPage([self._out(item) for item in page.items], page.revision, page.more)

    def watch(self, prefix: str, revision: int) -> Watch:
        return _ConvertingWatch(self.backend.watch(prefix, revision), self._out_event)

    # -- writes ----------------------------------------------------------------------

    async def create(self, key: str, obj: JSON) -> StoredObject:
        return self._out(await self.backend.create(key, self._in(key, obj)))

    async def update(self, key: str, obj: JSON, *, expected_revision: int | None) -> StoredObject:
        stored = await self.backend.update(
            key, self._in(key, obj), expected_revision=expected_revision
        )
        return self._out(stored)

    async def delete(self, key: str, *, expected_revision: int | None) -> StoredObject:
        return self._out(await self.backend.delete(key, expected_revision=expected_revision))

    async def create_many(self, items: Sequence[tuple[str, JSON]]) -> _Objects:
        created = await self.backend.create_many([(k, self._in(k, obj)) for k, obj in items])
        return [self._out(stored) for stored in created]

    async def delete_many(self, items: Sequence[tuple[str, int | None]]) -> _Objects:
        return [self._out(stored) for stored in await self.backend.delete_many(items)]

    async def compact(self, revision: int) -> None:
        await self.backend.compact(revision)


class _ConvertingWatch(Watch):
    """A backend watch whose events are converted as they are read; progress, cut-off and
    closing are the backend's."""

    def __init__(self, inner: Watch, convert: Callable[[WatchEvent], WatchEvent]) -> None:
        self.inner = inner
        self.convert = convert

    async def _events(self) -> AsyncIterator[WatchEvent]:
        async for event in self.inner:
            yield self.convert(event)

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._events()

    def progress(self) -> int | None:
        return self.inner.progress()

    async def close(self) -> None:
        await self.inner.close()

    # The consumer sets these hooks on the watch it holds; the backend calls the inner's.
    @property
    def on_cut(self) -> Callable[[], None] | None:
        return self.inner.on_cut

    @on_cut.setter
    def on_cut(self, value: Callable[[], None] | None) -> None:
        self.inner.on_cut = value

    @property
    def on_progress(self) -> Callable[[], None] | None:
        return self.inner.on_progress

    @on_progress.setter
    def on_progress(self, value: Callable[[], None] | None) -> None:
        self.inner.on_progress = value

    @property
    def reported_revision(self) -> int:
        return self.inner.reported_revision

    @reported_revision.setter
    def reported_revision(self, value: int) -> None:
        self.inner.reported_revision = value

    def request_progress(self) -> None:
        self.inner.request_progress()

    def request_ordered_progress(self) -> None:
        self.inner.request_ordered_progress()

"""What every source shares: the cache, handler dispatch, ``has_synced`` and the revision.

A concrete source implements ``_run`` (its list/watch loop) and feeds the cache with
``_replace`` (a complete list at a revision), ``_apply`` (one watch event) and
``_progress`` (a bookmark: everything up to a revision has been seen).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from ..storage import EventType
from ..tasks import BackgroundTask
from .cache import ObjectCache
from .interface import JSON, Handler, Indexer, SourceEvent

log = logging.getLogger("apiserver.sources")


class Informer:
    """Base of the sources: a cache kept by a background list/watch task."""

    def __init__(self, name: str, indexers: Mapping[str, Indexer] | None = None) -> None:
        self.name = name
        self.cache = ObjectCache(indexers)
        self._handlers: list[Handler] = []
        self._synced = asyncio.Event()
        self._revision = 0
        self._task = BackgroundTask(f"source {name}", self._run, log)
        self.relists = 0
        """How many times the source listed again after its first list."""
        self.expirations = 0
        """How many times its resourceVersion was too old for a watch (410 Gone)."""
        self.failures = 0
        """How many list or watch attempts failed and were retried after a backoff."""

    # -- the Source interface ----------------------------------------------------

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    async def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.close()

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    @property
    def revision(self) -> int:
        return self._revision

    def get(self, key: str) -> JSON | None:
        return self.cache.get(key)

    def items(self) -> list[JSON]:
        return list(self.cache.objects.values())

    def by_index(self, index: str, value: str) -> list[JSON]:
        return self.cache.by_index(index, value)

    # -- for the implementations -------------------------------------------------

    async def _run(self) -> None:
        raise NotImplementedError

    def _dispatch(self, event: SourceEvent) -> None:
        for handler in self._handlers:
            try:
                handler(event)
            except Exception:
                log.exception("handler of source %s failed on %s", self.name, event.key)

    def _replace(self, items: list[JSON], revision: int) -> None:
        """A complete list read at ``revision``: the cache becomes exactly that."""
        if self.has_synced:
            self.relists += 1
        events = self.cache.replace(items)
        self._revision = revision
        for event in events:
            self._dispatch(event)
        self._synced.set()

    def _apply(self, kind: EventType, obj: JSON, revision: int) -> None:
        """One watch event at ``revision``."""
        event = self.cache.delete(obj) if kind is EventType.DELETED else self.cache.upsert(obj)
        self._revision = max(self._revision, revision)
        if event is not None:
            self._dispatch(event)

    def _progress(self, revision: int) -> None:
        self._revision = max(self._revision, revision)

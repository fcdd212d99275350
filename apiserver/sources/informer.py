"""What every source shares: the cache, handler dispatch, ``has_synced``, the revision, and
the list/watch loop with its backoff.

The loop lists (at start, and whenever the history the watch needs is gone), then watches
until the watch ends, and watches again from where it was. A failure the source names
transient (``transient``) is retried after a backoff, resuming the watch; an expired
resourceVersion (``gone``) lists again; any other failure lists again after a backoff. A
watch that ends soon without delivering anything waits a backoff before the next one.

A concrete source implements ``_list`` and ``_watch`` and feeds the cache with
``_replace`` (a complete list at a revision), ``_apply`` (one watch event) and
``_progress`` (a bookmark: everything up to a revision has been seen).
"""

from __future__ import annotations

import asyncio
import logging
import time

from ..storage import EventType
from ..tasks import BackgroundTask
from .backoff import Backoff
from .cache import ObjectCache
from .interface import JSON, Handler, SourceEvent

log = logging.getLogger("apiserver.sources")

QUICK_END = 1.0
"""A watch that ends sooner than this without delivering anything waits a backoff first."""


class Informer:
    """Base of the sources: a cache kept by a background list/watch task."""

    gone: tuple[type[Exception], ...] = ()
    """Failures that mean the resourceVersion the watch needs has expired: list again."""
    transient: tuple[type[Exception], ...] = ()
    """Failures worth retrying as they are, after a backoff."""

    def __init__(
        self,
        name: str,
        backoff: Backoff | None = None,
    ) -> None:
        self.name = name
        self.backoff = backoff or Backoff()
        self.cache = ObjectCache()
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

    # -- for the implementations -------------------------------------------------

    async def _run(self) -> None:
        relist = not self.has_synced  # started again: resume the watch where it stopped
        while True:
            try:
                if relist:
                    await self._list()
                    self.backoff.reset()
                    relist = False
                began = time.monotonic()
                if not await self._watch() and time.monotonic() - began < QUICK_END:
                    await self.backoff.wait()  # the watch ended at once: do not spin
            except self.gone as err:
                log.info("source %s: %s; listing again", self.name, err)
                self.expirations += 1
                relist = True
            except self.transient as err:
                self.failures += 1
                log.warning("source %s: %s; retrying", self.name, err)
                await self.backoff.wait()
            except Exception:
                self.failures += 1
                log.exception("source %s failed; listing again", self.name)
                relist = True
                await self.backoff.wait()

    async def _list(self) -> None:
        """List every object and ``_replace`` the cache with them."""
        raise NotImplementedError

    async def _watch(self) -> bool:
        """Follow one watch from ``revision`` until it ends, feeding the cache; True if it
        delivered something."""
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

"""What every source shares: the cache, handler dispatch, ``has_synced``, the revision, and
the list/watch loop (the toolkit's ``Reflector``, the same loop the watch cache runs).

A concrete source implements ``_list`` and ``_watch`` and feeds the cache with
``_replace`` (a complete list at a revision), ``_apply`` (one watch event) and
``_progress`` (a bookmark: everything up to a revision has been seen).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ..storage import EventType
from ..tasks import BackgroundTask
from ..toolkit import JSON, Backoff, Reflector
from .cache import ObjectCache
from .interface import Handler, SourceEvent

log = logging.getLogger("apiserver.sources")


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
        self.cache = ObjectCache()
        self._handlers: list[Handler] = []
        self._synced = asyncio.Event()
        self._revision = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        """Callers of ``reached`` and the revision each waits for."""
        self.reflector = Reflector(
            f"source {name}",
            list_all=self._list,
            watch=self._watch,
            gone=self.gone,
            transient=self.transient,
            log=log,
            backoff=backoff,
        )
        self._task = BackgroundTask(f"source {name}", self.reflector.run, log)

    @property
    def backoff(self) -> Backoff:
        return self.reflector.backoff

    @property
    def relists(self) -> int:
        """How many times the source listed again after its first list."""
        return self.reflector.relists

    @property
    def expirations(self) -> int:
        """How many times its resourceVersion was too old for a watch (410 Gone)."""
        return self.reflector.expirations

    @property
    def failures(self) -> int:
        """How many list or watch attempts failed and were retried after a backoff."""
        return self.reflector.failures

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

    async def reached(self, revision: int) -> None:
        if self._revision >= revision:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((revision, waiter))
        await waiter

    def _wake(self) -> None:
        """Resolve the waiters the revision has reached (and drop the cancelled)."""
        if not self._waiters:
            return
        waiting = []
        for revision, waiter in self._waiters:
            if waiter.done():
                continue
            if revision <= self._revision:
                waiter.set_result(None)
            else:
                waiting.append((revision, waiter))
        self._waiters = waiting

    def request_progress(self) -> None:
        """Nothing to ask by default: the revision moves with events and bookmarks."""

    def get(self, key: str) -> JSON | None:
        return self.cache.get(key)

    def lookup(self) -> Callable[[str], JSON | None]:
        return self.cache.objects.get

    def items(self) -> list[JSON]:
        return list(self.cache.objects.values())

    # -- for the implementations -------------------------------------------------

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
        events = self.cache.replace(items)
        self._revision = revision
        for event in events:
            self._dispatch(event)
        self._synced.set()
        self._wake()

    def _apply(self, kind: EventType, obj: JSON, revision: int) -> None:
        """One watch event at ``revision``."""
        event = self.cache.delete(obj) if kind is EventType.DELETED else self.cache.upsert(obj)
        self._revision = max(self._revision, revision)
        if event is not None:
            self._dispatch(event)
        self._wake()

    def _progress(self, revision: int) -> None:
        self._revision = max(self._revision, revision)
        self._wake()

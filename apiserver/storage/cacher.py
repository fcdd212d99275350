"""The watch cache: a Store in front of another, like kube-apiserver's cacher.

For each resource prefix (``/<group>/<plural>/``, the first two segments of a key) it
keeps one upstream watch, and from it an in-memory map of the current objects and a
bounded window of recent events. Every client watch of that prefix is served from the
window and then fanned out from the one upstream watch, every watcher getting the same
event object; gets and lists are answered from memory.

Consistency: a get or a list with no revision must see every write acknowledged before
it began, made by this process or another replica. So it first asks the backend for its
current revision (one cheap read, shared by concurrent callers), then waits until the
cache has provably reached it: through events, or through a progress notification that
the backend orders after pending events. If that does not happen promptly (for
instance etcd reports progress but cannot prove the order, or the cache is resyncing)
the read goes to the backend, which is always consistent. Lists at an exact older
revision, continue tokens of an older snapshot and watches from before the window also
go to the backend, which keeps the longer history.

Writes pass through; the cache learns of them from the upstream watch. When the
upstream says the cache's revision was compacted away, the cache relists and closes its
watchers, who re-watch from their last revision (resuming from the backend's history,
or 410 Gone so their clients relist). A transient upstream failure (etcd down) keeps the
cache and its watchers: the upstream watch resumes from the cache's revision.

A client watch's progress requests go to the upstream watch of its prefix (an ordered one
may cost the backend a write; see ``Watch.request_ordered_progress``), and the upstream's
progress reports reach it through ``on_progress``.

Memory: the current objects of each cached prefix, plus at most ``window`` events and
``window_bytes`` of them per prefix (their JSON bytes, without parsed copies). Watchers are
handed the same lean events (a parsed copy is made once, when a watcher needs one), and one
whose buffer stays full for ``stall_timeout`` seconds, or that falls more than
``max_pending`` events behind, is closed, as in the Go cacher (see ``fanout``).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from ..tasks import BackgroundTask
from ..toolkit import Backoff, Reflector
from .errors import RevisionCompactedError, StorageError
from .fanout import STALL_TIMEOUT, Fanout, FollowingWatch
from .interface import EventType, ListPage, Store, StoredObject, Watch, WatchEvent, prefix_end
from .window import WATCH_WINDOW, EventWindow, SortedMap, lean_event

log = logging.getLogger("apiserver.storage.cacher")


def kind_prefix(key: str) -> str | None:
    """``/<a>/<b>/`` for a key or prefix below it; None if it has fewer segments."""
    if not key.startswith("/"):
        return None
    second = key.find("/", 1)
    if second < 0:
        return None
    third = key.find("/", second + 1)
    if third < 0:
        return None
    return key[: third + 1]


class _PrefixCache:
    """The cached state of one prefix and the reflector that keeps it current."""

    def __init__(self, owner: WatchCache, prefix: str) -> None:
        self.owner = owner
        self.backend = owner.backend
        self.prefix = prefix
        self.objects: SortedMap[StoredObject] = SortedMap()
        self.revision = 0
        self.window = EventWindow(
            owner.window, slack=max(owner.window // 4, 1), max_bytes=owner.window_bytes
        )
        self.synced = False
        self.fanout = owner.new_fanout(0)
        self._changed = asyncio.Event()
        self._synced_event = asyncio.Event()
        self._upstream: Watch | None = None
        self.progress_listeners: set[Callable[[], None]] = set()
        """Called when the upstream reports progress (client watches' ``on_progress``)."""
        self.reflector = Reflector(
            f"watch cache {prefix}",
            list_all=self._list,
            watch=self._watch,
            gone=(RevisionCompactedError,),
            transient=(StorageError,),
            log=log,
            backoff=Backoff(initial=0.05, maximum=1.0),
            must_list=self._unsync,
        )
        self._task = BackgroundTask(f"watch-cache {prefix}", self.reflector.run, log)

    def start(self) -> None:
        self._task.start()

    async def stop(self) -> None:
        await self._task.close()
        self.fanout.close_all()

    # -- the reflector's list and watch ---------------------------------------------

    async def _list(self) -> None:
        self._replace(await self.backend.list(self.prefix))

    async def _watch(self) -> bool:
        watch = self.backend.watch(self.prefix, self.revision)
        self._upstream = watch
        watch.on_progress = self._on_progress
        delivered = False
        try:
            async for event in watch:
                self._apply(event)
                delivered = True
        finally:
            self._upstream = None
            with contextlib.suppress(Exception):
                await watch.close()
            self._notify()
        return delivered

    def _unsync(self) -> None:
        self.synced = False
        self._synced_event = asyncio.Event()

    async def wait_synced(self, closed: asyncio.Event) -> bool:
        """Wait for the cache to sync (however long it takes); False if ``closed`` first."""
        while not self.synced:
            if closed.is_set():
                return False
            synced = asyncio.ensure_future(self._synced_event.wait())
            stop = asyncio.ensure_future(closed.wait())
            try:
                await asyncio.wait((synced, stop), return_when=asyncio.FIRST_COMPLETED)
            finally:
                synced.cancel()
                stop.cancel()
        return not closed.is_set()

    def _replace(self, page: ListPage) -> None:
        """A fresh state from a list; watchers of the old one are closed."""
        self.fanout.close_all()
        self.fanout = self.owner.new_fanout(page.revision)
        self.objects = SortedMap({item.key: item for item in page.items})
        self.revision = page.revision
        self.window.reset(page.revision)
        self.synced = True
        self._synced_event.set()
        self._notify()

    def _apply(self, event: WatchEvent) -> None:
        # One transaction may change several keys at one revision (etcd): an event at the
        # cache's own revision is the next key of that transaction, never a repeat, since a
        # list or a resumed watch ends or starts at a whole revision.
        if event.revision < self.revision:
            return
        key = event.object.key
        if event.type is EventType.DELETED:
            old = self.objects.pop(key)
        else:
            old = self.objects.put(key, event.object)
        if event.prev is None and event.type is not EventType.ADDED and old is not None:
            event = WatchEvent(event.type, event.object, old)
        self.revision = event.revision
        self.window.extend([event])  # at most 1.25 x window in memory
        # Watchers that fall behind hold events: without the parsed copies, which can be
        # ten times the bytes (the current objects keep theirs, for gets and lists). Not
        # the window's own copies either: a watcher's selectors parse what it is handed.
        self.fanout.publish(lean_event(event))
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _on_progress(self) -> None:
        self._notify()
        for listener in tuple(self.progress_listeners):
            listener()

    def request_progress(self, *, ordered: bool) -> None:
        """Ask the upstream for progress (see ``Watch.request_ordered_progress``)."""
        upstream = self._upstream
        if upstream is None:
            return
        if ordered:
            upstream.request_ordered_progress()
        else:
            upstream.request_progress()

    # -- reads -------------------------------------------------------------------------

    def progress(self) -> int:
        """A revision the cache is complete up to: its own, or the upstream's if later."""
        upstream = self._upstream
        known = upstream.progress() if upstream is not None else None
        if known is not None and known > self.revision:
            self.revision = known
        return self.revision

    async def fresh(self, revision: int) -> bool:
        """Wait until the cache is complete up to ``revision``; False if it cannot say."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.owner.wait_timeout
        asked = False
        while self.synced:
            if self.progress() >= revision:
                return True
            upstream = self._upstream
            if upstream is not None:
                if asked and upstream.reported_revision >= revision:
                    # The backend is past it but cannot prove the events came first.
                    return False
                upstream.request_progress()
                asked = True
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._changed.wait()
        return False

    def page(self, prefix: str, start: str, limit: int) -> ListPage:
        keys, more = self.objects.page(prefix, start, limit)
        return ListPage([self.objects[k] for k in keys], self.revision, more)


class WatchCache:
    def __init__(
        self,
        backend: Store,
        *,
        prefixes: tuple[str, ...] | list[str] = (),
        window: int = WATCH_WINDOW,
        window_bytes: int = 0,
        max_pending: int = WATCH_WINDOW,
        wait_timeout: float = 3.0,
        stall_timeout: float = STALL_TIMEOUT,
    ) -> None:
        """``window``: events kept per prefix for watches; ``window_bytes``: the most bytes
        they may take per prefix (0: no bound but the count); ``stall_timeout``: seconds a
        watcher's buffer may stay full before the watcher is closed."""
        if window < 1:
            raise ValueError("the event window must hold at least one event")
        self.backend = backend
        self.window = window
        self.window_bytes = window_bytes
        self.max_pending = max_pending
        self.wait_timeout = wait_timeout
        self.stall_timeout = stall_timeout
        self._wanted = list(prefixes)
        self._prefix_caches: dict[str, _PrefixCache] = {}
        self._started = False

    async def start(self) -> None:
        await self.backend.start()
        self._started = True
        for prefix in self._wanted:
            self._prefix_cache(prefix)

    async def close(self) -> None:
        self._started = False
        prefix_caches, self._prefix_caches = list(self._prefix_caches.values()), {}
        for prefix_cache in prefix_caches:
            await prefix_cache.stop()
        await self.backend.close()

    def new_fanout(self, revision: int) -> Fanout:
        return Fanout(revision, self.max_pending, stall_timeout=self.stall_timeout)

    def _prefix_cache(self, key: str) -> _PrefixCache | None:
        prefix = kind_prefix(key)
        if prefix is None or not self._started:
            return None
        prefix_cache = self._prefix_caches.get(prefix)
        if prefix_cache is None:
            prefix_cache = self._prefix_caches[prefix] = _PrefixCache(self, prefix)
            prefix_cache.start()
        return prefix_cache

    @property
    def revision(self) -> int:
        return self.backend.revision

    @property
    def compacted_revision(self) -> int:
        return self.backend.compacted_revision

    async def current_revision(self) -> int:
        return await self.backend.current_revision()

    def readiness(self) -> dict[str, bool]:
        checks = dict(self.backend.readiness())
        for prefix, prefix_cache in sorted(self._prefix_caches.items()):
            checks[f"watch-cache {prefix}"] = prefix_cache.synced
        return checks

    async def _consistent(self, prefix_cache: _PrefixCache) -> bool:
        if not prefix_cache.synced:
            return False
        return await prefix_cache.fresh(await self.backend.current_revision())

    # -- reads -------------------------------------------------------------------------

    async def get(self, key: str) -> StoredObject | None:
        prefix_cache = self._prefix_cache(key)
        if prefix_cache is not None and await self._consistent(prefix_cache):
            return prefix_cache.objects.get(key)
        return await self.backend.get(key)

    async def list(
        self, prefix: str, *, revision: int | None = None, start: str = "", limit: int = 0
    ) -> ListPage:
        prefix_cache = self._prefix_cache(prefix)
        if prefix_cache is not None:
            if revision is None:
                if await self._consistent(prefix_cache):
                    return prefix_cache.page(prefix, start, limit)
            elif prefix_cache.synced and revision == prefix_cache.revision:
                return prefix_cache.page(prefix, start, limit)
        return await self.backend.list(prefix, revision=revision, start=start, limit=limit)

    # -- writes pass through ---------------------------------------------------------------

    async def create(self, key: str, obj: dict[str, Any]) -> StoredObject:
        return await self.backend.create(key, obj)

    async def update(
        self, key: str, obj: dict[str, Any], *, expected_revision: int | None
    ) -> StoredObject:
        return await self.backend.update(key, obj, expected_revision=expected_revision)

    async def delete(self, key: str, *, expected_revision: int | None) -> StoredObject:
        return await self.backend.delete(key, expected_revision=expected_revision)

    async def create_many(
        self, items: Sequence[tuple[str, dict[str, Any]]]
    ) -> builtins.list[StoredObject]:
        return await self.backend.create_many(items)

    async def delete_many(
        self, items: Sequence[tuple[str, int | None]]
    ) -> builtins.list[StoredObject]:
        return await self.backend.delete_many(items)

    async def compact(self, revision: int) -> None:
        await self.backend.compact(revision)

    # -- watch -------------------------------------------------------------------------

    def watch(self, prefix: str, revision: int) -> Watch:
        prefix_cache = self._prefix_cache(prefix)
        if prefix_cache is None:
            return self.backend.watch(prefix, revision)
        return _CacheWatch(self, prefix_cache, prefix, revision)


class _CacheWatch(FollowingWatch):
    """A client's watch: the cache's window after its revision, then live events."""

    def __init__(
        self, cache: WatchCache, prefix_cache: _PrefixCache, prefix: str, revision: int
    ) -> None:
        super().__init__(revision)
        self._cache = cache
        self._prefix_cache = prefix_cache
        self._prefix = prefix
        self._end = prefix_end(prefix)
        self._revision = revision
        self._direct: Watch | None = None
        self._closed = asyncio.Event()

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[WatchEvent]:
        prefix_cache = self._prefix_cache
        # The first sync of a prefix (or a resync): wait for it, as long as it takes.
        if not await prefix_cache.wait_synced(self._closed):
            return
        if self._revision < prefix_cache.window.start:
            # Older than the window: the backend's history has it (or says 410).
            self._direct = self._cache.backend.watch(self._prefix, self._revision)
            self._direct.on_progress = self._report_progress
            async for event in self._direct:
                yield event
            return
        sub = prefix_cache.fanout.subscribe(self._prefix, self._end)
        # Subscribing and copying the window happen in one step: no gap, no duplicate.
        backlog = [
            e
            for e in prefix_cache.window.after(self._revision)
            if self._prefix <= e.object.key < self._end
        ]
        prefix_cache.progress_listeners.add(self._report_progress)
        try:
            async for event in self._replay_then_follow(backlog, sub):
                yield event
        finally:
            prefix_cache.progress_listeners.discard(self._report_progress)

    def _report_progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress()

    def _head(self) -> int:
        return self._prefix_cache.progress()

    def progress(self) -> int | None:
        if self._direct is not None:
            return self._direct.progress()
        return super().progress()

    def request_progress(self) -> None:
        if self._direct is not None:
            self._direct.request_progress()
        else:
            self._prefix_cache.request_progress(ordered=False)

    def request_ordered_progress(self) -> None:
        if self._direct is not None:
            self._direct.request_ordered_progress()
        else:
            self._prefix_cache.request_progress(ordered=True)

    async def close(self) -> None:
        self._closed.set()
        await super().close()
        if self._direct is not None:
            await self._direct.close()

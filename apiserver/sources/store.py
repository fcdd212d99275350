"""A source over our own Store (standalone mode): list, then watch from the list's revision.

The list is read in pages at one revision (a consistent snapshot). The watch starts right
after it; a watch that ends (the store cut off a slow watcher) resumes from the last
revision seen. 410 Gone (``RevisionCompactedError``) means the history the watch needs is
gone: list again, and tell handlers the difference. Any other storage failure is retried
after an exponential backoff, resuming the watch where it stopped (the loop is
``Informer``'s). When the watch is idle, its progress (the store's bookmarks) advances the
source's revision: read every ``progress_interval``, and at once when the backend reports
progress or a reader asks (``request_progress``), so that a reader waiting for the store's
current revision does not wait for the next interval. What a reader asks for is progress it
can count on (``Watch.request_ordered_progress``), on any etcd.
"""

from __future__ import annotations

import asyncio
import contextlib

from ..storage import RevisionCompactedError, StorageError, Store, Watch
from ..tasks import BackgroundTask
from ..toolkit import JSON, Backoff
from .informer import Informer, log


class StoreSource(Informer):
    gone = (RevisionCompactedError,)
    transient = (StorageError,)

    def __init__(
        self,
        store: Store,
        prefix: str,
        *,
        name: str,
        page_size: int = 500,
        progress_interval: float = 1.0,
        backoff: Backoff | None = None,
    ) -> None:
        super().__init__(name, backoff)
        self.store = store
        self.prefix = prefix
        self.page_size = page_size
        self.progress_interval = progress_interval
        self._current: Watch | None = None
        self._progress_due = asyncio.Event()

    async def _list(self) -> None:
        items: list[JSON] = []
        revision: int | None = None
        start = ""
        while True:
            page = await self.store.list(
                self.prefix, revision=revision, start=start, limit=self.page_size
            )
            revision = page.revision
            items.extend(item.obj for item in page.items)
            if not page.more or not page.items:
                break
            start = page.items[-1].key + "\x00"
        self._replace(items, revision)

    def request_progress(self) -> None:
        watch = self._current
        if watch is not None:
            # Progress a reader can count on: an etcd that cannot order its notifications
            # gets a progress mark written; the other backends know already.
            watch.request_ordered_progress()
            self._progress_due.set()

    async def _watch(self) -> bool:
        watch = self.store.watch(self.prefix, self.revision)
        watch.on_progress = self._progress_due.set
        self._current = watch
        follower = BackgroundTask(
            f"source {self.name} progress", lambda: self._follow_progress(watch), log
        )
        follower.start()
        delivered = False
        try:
            async for event in watch:
                self._apply(event.type, event.object.obj, event.revision)
                if not delivered:
                    delivered = True
                    self.backoff.reset()
        finally:
            self._current = None
            await follower.close()
            await watch.close()
        return delivered

    async def _follow_progress(self, watch: Watch) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.progress_interval):
                    await self._progress_due.wait()
            self._progress_due.clear()
            progress = watch.progress()
            if progress is not None:
                self._progress(progress)

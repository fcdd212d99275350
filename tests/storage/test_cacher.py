"""The watch cache: one upstream watch per prefix, memory reads, a bounded window, relists,
readiness, and consistent reads across two caches (two replicas) on one etcd."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from apiserver.storage import (
    EventType,
    RevisionCompactedError,
    StorageUnavailableError,
    Watch,
    WatchEvent,
)
from apiserver.storage.cacher import WatchCache, kind_prefix
from apiserver.storage.sqlite import SQLiteStore
from devtools.localetcd import LocalEtcd
from devtools.waiting import eventually
from tests.storage.items import HANG, PREFIX, item

from .conftest import etcd_store, unique_prefix


class CountingStore(SQLiteStore):
    """A real SQLite store that counts what the cache asks of it, and can fail its watches
    with 410 Gone as a backend does when the cache fell behind its history."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.calls = {"get": 0, "list": 0, "watch": 0}
        self.gone = False
        self.watches: list[Watch] = []

    async def get(self, key: str) -> Any:
        self.calls["get"] += 1
        return await super().get(key)

    async def list(self, prefix: str, **kw: Any) -> Any:
        self.calls["list"] += 1
        return await super().list(prefix, **kw)

    def watch(self, prefix: str, revision: int) -> Any:
        self.calls["watch"] += 1
        if self.gone:
            return _Gone(revision, self.compacted_revision)
        w = super().watch(prefix, revision)
        self.watches.append(w)
        return w


class _Gone(Watch):
    def __init__(self, revision: int, compacted: int) -> None:
        self.error = RevisionCompactedError(revision, compacted)

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[WatchEvent]:
        raise self.error
        yield  # pragma: no cover - makes this an async generator

    def progress(self) -> int | None:
        return None

    async def close(self) -> None:
        return None


@pytest.fixture
async def counted(tmp_path: Path) -> AsyncIterator[tuple[WatchCache, CountingStore]]:
    backend = CountingStore(tmp_path / "store.db")
    cache = WatchCache(backend, prefixes=[PREFIX], window=8, max_pending=5)
    await cache.start()
    await eventually(lambda: all(cache.readiness().values()))
    try:
        yield cache, backend
    finally:
        await cache.close()


def test_kind_prefix_is_the_first_two_segments() -> None:
    assert kind_prefix("/g/p/name") == "/g/p/"
    assert kind_prefix("/g/p/ns/name") == "/g/p/"
    assert kind_prefix("/g/p/") == "/g/p/"
    assert kind_prefix("/g/p") is None
    assert kind_prefix("g/p/x") is None


def test_window_must_hold_an_event(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="window"):
        WatchCache(SQLiteStore(tmp_path / "x.db"), window=0)


async def test_gets_and_lists_come_from_memory(
    counted: tuple[WatchCache, CountingStore],
) -> None:
    cache, backend = counted
    for i in range(5):
        await cache.create(PREFIX + f"o{i}", item(f"o{i}", i))
    before = dict(backend.calls)
    for i in range(5):
        got = await cache.get(PREFIX + f"o{i}")
        assert got is not None
        assert got.obj["n"] == i
    page = await cache.list(PREFIX, limit=2)
    assert [o.obj["n"] for o in page.items] == [0, 1]
    assert page.more
    rest = await cache.list(PREFIX, revision=page.revision, start=page.items[-1].key + "\x00")
    assert [o.obj["n"] for o in rest.items] == [2, 3, 4]
    assert backend.calls == before


async def test_one_upstream_watch_feeds_every_watcher_the_same_event(
    counted: tuple[WatchCache, CountingStore],
) -> None:
    cache, backend = counted
    start = await cache.current_revision()
    watches = [cache.watch(PREFIX, start) for _ in range(50)]
    streams = [aiter(w) for w in watches]
    try:
        written = await cache.create(PREFIX + "shared", item("shared"))
        events = [await asyncio.wait_for(anext(s), HANG) for s in streams]
        assert all(e.revision == written.revision for e in events)
        assert all(e is events[0] for e in events)
        assert backend.calls["watch"] == 1
    finally:
        for w in watches:
            await w.close()


async def test_watch_older_than_the_window_is_served_from_backend_history(
    counted: tuple[WatchCache, CountingStore],
) -> None:
    cache, backend = counted
    first = await cache.create(PREFIX + "a", item("a", 0))
    for i in range(1, 30):
        await cache.update(PREFIX + "a", item("a", i), expected_revision=None)
    last = await cache.get(PREFIX + "a")
    assert last is not None
    cached = cache._prefix_caches[PREFIX]
    assert len(cached.window) <= 8 + 2
    assert cached.window.start > first.revision
    watches_before = backend.calls["watch"]
    watch = cache.watch(PREFIX, first.revision)
    try:
        events = aiter(watch)
        replay = [await asyncio.wait_for(anext(events), HANG) for _ in range(29)]
        assert [e.object.obj["n"] for e in replay] == list(range(1, 30))
        assert replay[-1].revision == last.revision
        assert backend.calls["watch"] == watches_before + 1
    finally:
        await watch.close()


async def test_watch_inside_the_window_replays_from_memory(
    counted: tuple[WatchCache, CountingStore],
) -> None:
    cache, backend = counted
    first = await cache.create(PREFIX + "a", item("a", 0))
    second = await cache.update(PREFIX + "a", item("a", 1), expected_revision=first.revision)
    await eventually(lambda: cache._prefix_caches[PREFIX].revision >= second.revision)
    watches_before = backend.calls["watch"]
    watch = cache.watch(PREFIX, first.revision)
    try:
        event = await asyncio.wait_for(anext(aiter(watch)), HANG)
        assert (event.type, event.revision) == (EventType.MODIFIED, second.revision)
        assert event.prev is not None
        assert event.prev.obj["n"] == 0
        assert backend.calls["watch"] == watches_before
    finally:
        await watch.close()


async def test_slow_watcher_is_cut_off_and_others_keep_going(
    counted: tuple[WatchCache, CountingStore],
) -> None:
    cache, _ = counted
    start = await cache.current_revision()
    slow, fast = cache.watch(PREFIX, start), cache.watch(PREFIX, start)
    slow_events, fast_events = aiter(slow), aiter(fast)
    try:
        first = await cache.create(PREFIX + "x0", item("x0"))
        assert (await asyncio.wait_for(anext(slow_events), HANG)).revision == first.revision
        assert (await asyncio.wait_for(anext(fast_events), HANG)).revision == first.revision
        received = []
        for i in range(1, 12):
            await cache.create(PREFIX + f"x{i}", item(f"x{i}"))
            received.append(await asyncio.wait_for(anext(fast_events), HANG))
        assert len(received) == 11
        # More than max_pending (5) events went unread: the slow watcher ends, and its
        # client re-watches from the last revision it saw.
        seen = [event async for event in slow_events]
        assert len(seen) <= 5
    finally:
        await slow.close()
        await fast.close()


async def test_upstream_410_relists_and_closes_watchers(
    counted: tuple[WatchCache, CountingStore],
) -> None:
    cache, backend = counted
    await cache.create(PREFIX + "a", item("a"))
    start = await cache.current_revision()
    watch = cache.watch(PREFIX, start)
    events = aiter(watch)
    pending = asyncio.ensure_future(anext(events))
    await eventually(lambda: watch.progress() is not None, "the watch to wait for events")
    lists_before = backend.calls["list"]
    # The next upstream watch finds the cache's revision gone; break the current one.
    backend.gone = True
    await backend.watches[-1].close()
    await eventually(lambda: backend.calls["list"] > lists_before)
    backend.gone = False
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(pending, HANG)
    await eventually(lambda: all(cache.readiness().values()))
    b = await cache.create(PREFIX + "b", item("b"))
    page = await cache.list(PREFIX)
    assert [o.key for o in page.items] == [PREFIX + "a", PREFIX + "b"]
    assert page.revision >= b.revision


async def test_consistent_read_waits_for_the_cache_to_reach_the_write(
    counted: tuple[WatchCache, CountingStore],
) -> None:
    cache, backend = counted
    before = dict(backend.calls)
    # Many writes and reads interleaved: every read sees the write acknowledged before it.
    for i in range(40):
        written = await cache.create(PREFIX + f"c{i:02d}", item(f"c{i:02d}", i))
        got = await cache.get(written.key)
        assert got is not None
        assert got.revision == written.revision
        page = await cache.list(PREFIX)
        assert len(page.items) == i + 1
    # The cache waited for each write to arrive; no read fell back to the backend.
    assert backend.calls == before


# -- on etcd -------------------------------------------------------------------------------


async def test_two_caches_on_one_etcd_see_each_others_writes(etcd: LocalEtcd) -> None:
    prefix = unique_prefix()
    a = WatchCache(etcd_store(etcd, prefix), prefixes=[PREFIX])
    b = WatchCache(etcd_store(etcd, prefix), prefixes=[PREFIX, "/test/idle/"])
    await a.start()
    await b.start()
    try:
        await eventually(lambda: all(a.readiness().values()) and all(b.readiness().values()))
        start = await b.current_revision()
        watch = b.watch(PREFIX, start)
        events = aiter(watch)
        for i in range(30):
            written = await a.create(PREFIX + f"o{i:02d}", item(f"o{i:02d}", i))
            got = await b.get(written.key)
            assert got is not None
            assert got.revision == written.revision
            page = await b.list(PREFIX)
            assert page.revision >= written.revision
            assert len(page.items) == i + 1
            # A kind with no events still answers at a revision past the write.
            idle = await b.list("/test/idle/")
            assert idle.items == []
            assert idle.revision >= written.revision
        received = [await asyncio.wait_for(anext(events), HANG) for _ in range(30)]
        assert [e.object.obj["n"] for e in received] == list(range(30))
        await watch.close()
    finally:
        await a.close()
        await b.close()


async def test_readiness_waits_for_etcd_and_the_first_sync(tmp_path: Path) -> None:
    later = LocalEtcd(tmp_path / "etcd" / "data", fast=True)
    cache = WatchCache(etcd_store(later, "/late"), prefixes=[PREFIX])
    await cache.start()
    try:
        assert cache.readiness() == {"etcd": False, f"watch-cache {PREFIX}": False}
        with pytest.raises(StorageUnavailableError):
            await asyncio.wait_for(cache.get(PREFIX + "a"), HANG)
        later.start()
        await eventually(lambda: all(cache.readiness().values()))
        created = await cache.create(PREFIX + "a", item("a"))
        got = await cache.get(PREFIX + "a")
        assert got is not None
        assert got.revision == created.revision
    finally:
        await cache.close()
        later.stop()


async def test_watchers_are_handed_events_without_parsed_copies(
    counted: tuple[WatchCache, CountingStore],
) -> None:
    """What a watcher that falls behind holds is JSON bytes, not the parsed objects (which
    the current state keeps for reads)."""
    cache, _ = counted
    watch = cache.watch(PREFIX, await cache.current_revision())
    events = aiter(watch)
    try:
        created = await cache.create(PREFIX + "lean", item("lean"))
        got = await asyncio.wait_for(anext(events), HANG)
        assert got.revision == created.revision
        assert got.object._parsed is None
        assert "obj" not in vars(got.object)
        assert got.object.obj["metadata"]["name"] == "lean"  # parsed when asked
    finally:
        await watch.close()

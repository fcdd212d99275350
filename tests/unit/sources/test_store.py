"""Sources over a real SQLite store: list then watch, events with the old state,
relisting after compaction, retrying an unavailable store, progress from bookmarks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from apiserver.sources import (
    Backoff,
    MemorySource,
    SourceEvent,
    StoreSource,
)
from apiserver.storage import ListPage, StorageUnavailableError, Store
from apiserver.storage.sqlite import SQLiteStore
from devtools.waiting import eventually
from tests.unit.builders import device, slice_obj

PREFIX = "/resource.k8s.io/resourceslices/"
WAIT = 10.0


def key(name: str) -> str:
    return PREFIX + name


class Events:
    def __init__(self) -> None:
        self.seen: list[SourceEvent] = []

    def __call__(self, event: SourceEvent) -> None:
        self.seen.append(event)

    def summary(self) -> list[tuple[str, str]]:
        return [(e.type.value, e.key) for e in self.seen]


@pytest.fixture
async def source(store: SQLiteStore) -> AsyncIterator[tuple[StoreSource, Events]]:
    await store.create(key("a"), slice_obj("a", [device("gpu-0")], pool="node-1"))
    await store.create(key("b"), slice_obj("b", [device("gpu-0")], driver="nic.example.com"))
    src = StoreSource(
        store,
        PREFIX,
        name="resourceslices",
        page_size=1,  # the list takes several pages
        progress_interval=0.01,
        backoff=Backoff(initial=0.001, maximum=0.01),
    )
    events = Events()
    src.add_handler(events)
    await src.start()
    await asyncio.wait_for(src.wait_synced(), WAIT)
    yield src, events
    await src.close()


async def test_list_then_watch(store: SQLiteStore, source: tuple[StoreSource, Events]) -> None:
    src, events = source
    assert src.has_synced
    assert events.summary() == [("ADDED", "a"), ("ADDED", "b")]
    assert sorted(o["metadata"]["name"] for o in src.items()) == ["a", "b"]

    await store.create(key("c"), slice_obj("c", []))
    first = await store.get(key("a"))
    assert first is not None
    changed = first.copy()
    changed["spec"]["devices"] = [device("gpu-1")]
    await store.update(key("a"), changed, expected_revision=first.revision)
    deleted = await store.delete(key("b"), expected_revision=None)
    await eventually(lambda: len(events.seen) == 5)

    assert events.summary()[2:] == [("ADDED", "c"), ("MODIFIED", "a"), ("DELETED", "b")]
    modified = events.seen[3]
    assert modified.old is not None
    assert modified.old["spec"]["devices"] == [device("gpu-0")]
    assert modified.obj["spec"]["devices"] == [device("gpu-1")]
    assert events.seen[4].old is not None
    assert src.get("b") is None
    assert src.revision == deleted.revision


async def test_relists_when_its_revision_was_compacted(
    store: SQLiteStore, source: tuple[StoreSource, Events]
) -> None:
    """Stopped, then started again after the history it needs is gone: the watch gets 410,
    the source lists again and tells its handlers only what changed meanwhile."""
    src, events = source
    await src.close()
    events.seen.clear()
    await store.create(key("c"), slice_obj("c", []))
    await store.delete(key("a"), expected_revision=None)
    latest = await store.create(key("d"), slice_obj("d", []))
    await store.compact(latest.revision)
    await src.start()
    await eventually(lambda: src.relists == 1 and len(events.seen) == 3)
    assert src.expirations == 1
    assert sorted(events.summary()) == [("ADDED", "c"), ("ADDED", "d"), ("DELETED", "a")]
    assert sorted(o["metadata"]["name"] for o in src.items()) == ["b", "c", "d"]


async def test_resumes_its_watch_without_listing_when_history_is_there(
    store: SQLiteStore, source: tuple[StoreSource, Events]
) -> None:
    src, events = source
    await src.close()
    events.seen.clear()
    await store.create(key("c"), slice_obj("c", []))
    await src.start()
    await eventually(lambda: len(events.seen) == 1)
    assert events.summary() == [("ADDED", "c")]
    assert src.relists == 0
    assert src.expirations == 0


async def test_progress_advances_the_revision_while_idle(
    store: SQLiteStore, source: tuple[StoreSource, Events]
) -> None:
    src, _ = source
    other = await store.create("/resource.k8s.io/deviceclasses/x", {"metadata": {"name": "x"}})
    await eventually(lambda: src.revision >= other.revision)


async def test_a_reader_asking_for_progress_does_not_wait_for_the_interval(
    store: SQLiteStore,
) -> None:
    """A reader about to wait for the store's revision (a consistent allocation review) asks
    the idle source for progress: it arrives now, not at the next periodic report."""
    src = StoreSource(store, PREFIX, name="resourceslices", progress_interval=3600)
    await src.start()
    try:
        await asyncio.wait_for(src.wait_synced(), WAIT)
        await store.create(key("a"), slice_obj("a", [device("gpu-0")]))
        await eventually(lambda: src.get("a") is not None, "the watch to be following")
        other = await store.create("/resource.k8s.io/deviceclasses/x", {"metadata": {"name": "x"}})
        assert src.revision < other.revision  # nothing of its own moved it

        def asked() -> bool:
            src.request_progress()
            return src.revision >= other.revision

        await eventually(asked)
    finally:
        await src.close()


class _Flaky:
    """A store whose first ``failures`` lists fail as unavailable."""

    def __init__(self, store: Store, failures: int) -> None:
        self.store = store
        self.failures = failures

    async def list(self, prefix: str, **kwargs: Any) -> ListPage:
        if self.failures:
            self.failures -= 1
            raise StorageUnavailableError("", "down")
        return await self.store.list(prefix, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


async def test_backs_off_and_retries_an_unavailable_store(store: SQLiteStore) -> None:
    await store.create(key("a"), slice_obj("a", []))
    flaky = _Flaky(store, failures=3)
    src = StoreSource(
        flaky,  # type: ignore[arg-type]
        PREFIX,
        name="resourceslices",
        backoff=Backoff(initial=0.001, maximum=0.01),
    )
    await src.start()
    await asyncio.wait_for(src.wait_synced(), WAIT)
    assert src.failures == 3
    assert src.get("a") is not None
    await src.close()


def test_backoff_grows_to_its_maximum_and_resets() -> None:
    backoff = Backoff(initial=1.0, maximum=4.0)
    delays = [backoff.delay() for _ in range(5)]
    assert all(0.5 <= d <= 4.0 for d in delays)
    assert delays[-1] >= 2.0  # at its maximum of 4, with at most half taken off
    backoff.reset()
    assert backoff.delay() <= 1.0


async def test_memory_source_stamps_revisions_and_notifies() -> None:
    src = MemorySource("things", [{"metadata": {"name": "a"}}])
    events = Events()
    src.add_handler(events)
    await src.start()
    put = src.put({"metadata": {"name": "b"}})
    src.remove("a")
    assert events.summary() == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    assert int(put["metadata"]["resourceVersion"]) < src.revision
    assert [o["metadata"]["name"] for o in src.items()] == ["b"]
    await src.close()


async def test_a_reader_waiting_for_a_revision_is_woken_once_its_events_are_handled(
    store: SQLiteStore, source: tuple[StoreSource, Events]
) -> None:
    """``reached``: returns at once for a revision seen; otherwise when the watch delivers
    it (its handlers have run by then); a waiter that gave up is dropped, and several
    rounds of waiters at once each wake for their own revision."""
    src, events = source
    await asyncio.wait_for(src.reached(src.revision), WAIT)  # seen already
    for round_ in range(3):
        abandoned = asyncio.ensure_future(src.reached(src.revision + 1_000_000))
        await asyncio.sleep(0)
        abandoned.cancel()
        made = [
            await store.create(key(f"r{round_}-{i}"), slice_obj(f"r{round_}-{i}", []))
            for i in range(4)
        ]
        waiters = [asyncio.ensure_future(src.reached(m.revision)) for m in made]
        await asyncio.wait_for(asyncio.gather(*waiters), WAIT)
        names = {e.key for e in events.seen}
        assert {f"r{round_}-{i}" for i in range(4)} <= names
        assert src.revision >= made[-1].revision
    pending = asyncio.ensure_future(src.reached(src.revision + 1_000_000))
    await asyncio.sleep(0.05)
    assert not pending.done()  # nothing reached it: it still waits
    pending.cancel()

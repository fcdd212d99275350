"""SQLiteStore: what only this backend does or promises (lists at its head revision, how
far a watch is complete, compaction by history size and at exactly the requested revision,
group commit, reopening the file, a closed store). The Store semantics every backend
shares are tested once, on every backend, in tests/storage/test_conformance.py."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from apiserver.storage import (
    KeyExistsError,
    PreconditionFailedError,
    RevisionCompactedError,
    StorageUnavailableError,
    StoredObject,
)
from apiserver.storage.sqlite import SQLiteStore
from devtools.waiting import eventually
from tests.storage.items import HANG, PREFIX, collect, item, key, next_event

# -- lists ----------------------------------------------------------------------------


async def test_lists_are_read_at_the_head_revision(store: SQLiteStore) -> None:
    for name in ("c", "a", "b"):
        await store.create(key(name), item(name))
    await store.create("/elsewhere/x", item("x"))
    page = await store.list(PREFIX)
    assert [i.key for i in page.items] == [key("a"), key("b"), key("c")]
    assert page.revision == store.revision
    empty = await store.list("/nothing/here/")
    assert empty.items == []
    assert empty.revision == store.revision


# -- watch ----------------------------------------------------------------------------


async def test_watch_progress_is_known_once_history_is_delivered(store: SQLiteStore) -> None:
    start = store.revision
    created = await store.create(key("a"), item("a"))
    watch = store.watch(PREFIX, start)
    events = aiter(watch)
    try:
        assert watch.progress() is None
        first = await next_event(events)
        assert first.revision == created.revision
        # Waiting for the next event means the history replay is over.
        pending = asyncio.ensure_future(anext(events))
        assert await eventually(watch.progress, "the watch to wait") == created.revision
        other = await store.create("/test/other/x", item("x"))
        # An event outside the prefix still advances how far this watch is complete.
        assert watch.progress() == other.revision
        mine = await store.create(key("b"), item("b"))
        event = await asyncio.wait_for(pending, HANG)
        assert event.revision == mine.revision
    finally:
        await watch.close()


# -- compaction -----------------------------------------------------------------------


async def test_automatic_compaction_makes_old_revisions_gone(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "small.db", history=5)
    await store.start()
    try:
        first = await store.create(key("a"), item("a", 0))
        for i in range(1, 130):
            await store.update(key("a"), item("a", i), expected_revision=None)
        assert store.compacted_revision > first.revision
        assert store.revision - store.compacted_revision <= 5 + 100

        with pytest.raises(RevisionCompactedError) as info:
            await store.list(PREFIX, revision=first.revision)
        assert info.value.requested == first.revision
        assert info.value.compacted == store.compacted_revision

        with pytest.raises(RevisionCompactedError):
            await anext(aiter(store.watch(PREFIX, first.revision)))

        # History newer than the compacted revision is intact.
        at = store.compacted_revision
        page = await store.list(PREFIX, revision=at)
        assert [i.obj["n"] for i in page.items] == [at - first.revision]
        watch = store.watch(PREFIX, at)
        events = aiter(watch)
        replay = await collect(events, store.revision - at)
        await watch.close()
        assert [e.revision for e in replay] == list(range(at + 1, store.revision + 1))
        assert all(e.prev is not None for e in replay)
    finally:
        await store.close()


async def test_explicit_compaction_is_at_exactly_the_requested_revision(
    store: SQLiteStore,
) -> None:
    a = await store.create(key("a"), item("a", 1))
    b = await store.create(key("b"), item("b", 1))
    await store.update(key("a"), item("a", 2), expected_revision=a.revision)
    await store.compact(b.revision)
    assert store.compacted_revision == b.revision
    with pytest.raises(RevisionCompactedError):
        await store.list(PREFIX, revision=a.revision)
    at_compacted = await store.list(PREFIX, revision=b.revision)
    assert [(i.key, i.obj["n"]) for i in at_compacted.items] == [(key("a"), 1), (key("b"), 1)]


async def test_list_revision_after_compacting_a_trailing_delete_is_watchable(
    store: SQLiteStore,
) -> None:
    await store.create(key("a"), item("a"))
    b = await store.create(key("b"), item("b"))
    deleted = await store.delete(key("b"), expected_revision=b.revision)
    await store.compact(deleted.revision)
    page = await store.list(PREFIX)
    assert [i.key for i in page.items] == [key("a")]
    # A client starts its watch from the list's revision; that must not be 410 Gone.
    assert page.revision >= store.compacted_revision
    watch = store.watch(PREFIX, page.revision)
    events = aiter(watch)
    try:
        created = await store.create(key("c"), item("c"))
        event = await next_event(events)
        assert event.revision == created.revision
    finally:
        await watch.close()


# -- group commit -------------------------------------------------------------------------


async def test_group_commit_fails_a_bad_write_alone(store: SQLiteStore) -> None:
    base = await store.create(key("target"), item("target", 0))
    await store.create(key("taken"), item("taken"))
    # Hold the database write lock so the writer thread blocks on its first batch while
    # the writes under test queue up behind it and are committed as one batch.
    blocker = sqlite3.connect(store.path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        writes = store._queue  # the writer thread's queue; its put count never goes down
        queued = writes.unfinished_tasks
        first = asyncio.ensure_future(store.create(key("first"), item("first")))
        await eventually(
            lambda: writes.unfinished_tasks == queued + 1 and writes.empty(),
            "the writer thread to take the first write",
        )
        results = asyncio.gather(
            store.create(key("g1"), item("g1")),
            store.update(key("target"), item("target", 1), expected_revision=base.revision - 1),
            store.create(key("g2"), item("g2")),
            store.create(key("taken"), item("taken")),
            store.update(key("target"), item("target", 2), expected_revision=base.revision),
            store.create(key("g3"), item("g3")),
            return_exceptions=True,
        )
        await eventually(lambda: writes.qsize() == 6, "the six writes to queue up")
    finally:
        blocker.execute("COMMIT")
        blocker.close()
    outcomes = await results
    await first
    g1, stale, g2, exists, good_update, g3 = outcomes
    assert isinstance(stale, PreconditionFailedError)
    assert isinstance(exists, KeyExistsError)
    oks = [g1, g2, good_update, g3]
    assert all(isinstance(o, StoredObject) for o in oks)
    revisions = [o.revision for o in oks if isinstance(o, StoredObject)]
    assert revisions == list(range(revisions[0], revisions[0] + 4))
    target = await store.get(key("target"))
    assert target is not None
    assert target.obj["n"] == 2
    names = [i.key for i in (await store.list(PREFIX)).items]
    assert names == [key(n) for n in ("first", "g1", "g2", "g3", "taken", "target")]


# -- durability ---------------------------------------------------------------------------


async def test_reopen_keeps_objects_and_revision_counter(tmp_path: Path) -> None:
    path = tmp_path / "durable.db"
    first = SQLiteStore(path)
    await first.start()
    a = await first.create(key("a"), item("a", 1))
    await first.update(key("a"), item("a", 2), expected_revision=a.revision)
    b = await first.create(key("b"), item("b"))
    gone = await first.delete(key("b"), expected_revision=b.revision)
    await first.close()

    second = SQLiteStore(path)
    await second.start()
    try:
        assert second.revision == gone.revision
        page = await second.list(PREFIX)
        assert [(i.key, i.obj["n"]) for i in page.items] == [(key("a"), 2)]
        assert page.revision == gone.revision
        old = await second.list(PREFIX, revision=b.revision)
        assert [i.key for i in old.items] == [key("a"), key("b")]
        nxt = await second.create(key("c"), item("c"))
        assert nxt.revision == gone.revision + 1
        watch = second.watch(PREFIX, a.revision)
        replay = await collect(aiter(watch), nxt.revision - a.revision)
        await watch.close()
        assert [e.revision for e in replay] == list(range(a.revision + 1, nxt.revision + 1))
    finally:
        await second.close()


async def test_reopen_keeps_compacted_revision(tmp_path: Path) -> None:
    path = tmp_path / "compacted.db"
    first = SQLiteStore(path)
    await first.start()
    a = await first.create(key("a"), item("a"))
    deleted = await first.delete(key("a"), expected_revision=a.revision)
    await first.compact(deleted.revision)
    await first.close()

    second = SQLiteStore(path)
    await second.start()
    try:
        assert second.compacted_revision == deleted.revision
        assert second.revision == deleted.revision
        created = await second.create(key("b"), item("b"))
        assert created.revision == deleted.revision + 1
        with pytest.raises(RevisionCompactedError):
            await second.list(PREFIX, revision=a.revision)
    finally:
        await second.close()


async def test_closed_store_refuses_requests(tmp_path: Path) -> None:
    s = SQLiteStore(tmp_path / "closed.db")
    await s.start()
    await s.close()
    with pytest.raises(StorageUnavailableError):
        await s.get(key("a"))
    with pytest.raises(StorageUnavailableError):
        await s.create(key("a"), item("a"))


def test_history_must_keep_a_revision() -> None:
    with pytest.raises(ValueError, match="history"):
        SQLiteStore(":memory:", history=0)

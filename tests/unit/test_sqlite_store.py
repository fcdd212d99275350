"""SQLiteStore: revisioned writes, preconditions, snapshot lists, watches, compaction, durability."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from apiserver.storage import (
    EventType,
    KeyExistsError,
    KeyNotFoundError,
    PreconditionFailedError,
    RevisionCompactedError,
    StorageUnavailableError,
    StoredObject,
    WatchEvent,
)
from apiserver.storage.sqlite import SQLiteStore

PREFIX = "/test/items/"
# Generous safety net so a broken watch fails the test instead of hanging it; never a
# measure of speed.
HANG = 30.0


def key(name: str) -> str:
    return PREFIX + name


def item(name: str, n: int = 0, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "n": n, **extra}


async def next_event(events: AsyncIterator[WatchEvent]) -> WatchEvent:
    return await asyncio.wait_for(anext(events), HANG)


async def collect(events: AsyncIterator[WatchEvent], count: int) -> list[WatchEvent]:
    return [await next_event(events) for _ in range(count)]


# -- basic CRUD -----------------------------------------------------------------------


async def test_create_sets_revision_and_resource_version(store: SQLiteStore) -> None:
    before = store.revision
    stored = await store.create(key("a"), item("a"))
    assert stored.revision == before + 1
    assert stored.key == key("a")
    assert stored.obj["metadata"]["resourceVersion"] == str(stored.revision)
    assert store.revision == stored.revision


async def test_get_returns_the_stored_bytes_or_none(store: SQLiteStore) -> None:
    created = await store.create(key("a"), item("a", 7))
    got = await store.get(key("a"))
    assert got is not None
    assert got.revision == created.revision
    assert got.obj == {"metadata": {"name": "a", "resourceVersion": str(created.revision)}, "n": 7}
    assert await store.get(key("missing")) is None


async def test_copy_is_independent_of_the_shared_parse(store: SQLiteStore) -> None:
    await store.create(key("a"), item("a", 1))
    got = await store.get(key("a"))
    assert got is not None
    mutable = got.copy()
    mutable["n"] = 99
    assert got.obj["n"] == 1


async def test_update_replaces_and_bumps_revision(store: SQLiteStore) -> None:
    created = await store.create(key("a"), item("a", 1))
    updated = await store.update(key("a"), item("a", 2), expected_revision=created.revision)
    assert updated.revision > created.revision
    got = await store.get(key("a"))
    assert got is not None
    assert got.obj["n"] == 2
    assert got.obj["metadata"]["resourceVersion"] == str(updated.revision)


async def test_update_without_precondition_always_applies(store: SQLiteStore) -> None:
    await store.create(key("a"), item("a", 1))
    await store.update(key("a"), item("a", 2), expected_revision=None)
    got = await store.get(key("a"))
    assert got is not None
    assert got.obj["n"] == 2


async def test_delete_returns_last_state_at_the_deletion_revision(store: SQLiteStore) -> None:
    created = await store.create(key("a"), item("a", 5))
    deleted = await store.delete(key("a"), expected_revision=created.revision)
    assert deleted.revision == created.revision + 1
    assert deleted.obj["n"] == 5
    assert deleted.obj["metadata"]["resourceVersion"] == str(deleted.revision)
    assert await store.get(key("a")) is None


async def test_create_after_delete_is_allowed(store: SQLiteStore) -> None:
    await store.create(key("a"), item("a", 1))
    await store.delete(key("a"), expected_revision=None)
    again = await store.create(key("a"), item("a", 2))
    got = await store.get(key("a"))
    assert got is not None
    assert got.revision == again.revision
    assert got.obj["n"] == 2


# -- preconditions ------------------------------------------------------------------


async def test_create_existing_key_raises_key_exists(store: SQLiteStore) -> None:
    first = await store.create(key("a"), item("a", 1))
    with pytest.raises(KeyExistsError) as info:
        await store.create(key("a"), item("a", 2))
    assert info.value.key == key("a")
    got = await store.get(key("a"))
    assert got is not None
    assert (got.revision, got.obj["n"]) == (first.revision, 1)
    assert store.revision == first.revision


@pytest.mark.parametrize("op", ["update", "delete"])
async def test_write_of_missing_key_raises_key_not_found(store: SQLiteStore, op: str) -> None:
    write = (
        store.update(key("nope"), item("nope"), expected_revision=None)
        if op == "update"
        else store.delete(key("nope"), expected_revision=None)
    )
    with pytest.raises(KeyNotFoundError) as info:
        await write
    assert info.value.key == key("nope")


@pytest.mark.parametrize("op", ["update", "delete"])
async def test_stale_expected_revision_raises_precondition_failed(
    store: SQLiteStore, op: str
) -> None:
    first = await store.create(key("a"), item("a", 1))
    second = await store.update(key("a"), item("a", 2), expected_revision=first.revision)
    write = (
        store.update(key("a"), item("a", 3), expected_revision=first.revision)
        if op == "update"
        else store.delete(key("a"), expected_revision=first.revision)
    )
    with pytest.raises(PreconditionFailedError) as info:
        await write
    assert (info.value.expected, info.value.actual) == (first.revision, second.revision)
    got = await store.get(key("a"))
    assert got is not None
    assert (got.revision, got.obj["n"]) == (second.revision, 2)
    assert store.revision == second.revision


async def test_failed_write_does_not_consume_a_revision(store: SQLiteStore) -> None:
    a = await store.create(key("a"), item("a"))
    with pytest.raises(KeyExistsError):
        await store.create(key("a"), item("a"))
    b = await store.create(key("b"), item("b"))
    assert b.revision == a.revision + 1


async def test_unencodable_object_fails_alone(store: SQLiteStore) -> None:
    with pytest.raises(TypeError):
        await store.create(key("bad"), {"metadata": {}, "value": object()})
    assert await store.get(key("bad")) is None
    ok = await store.create(key("ok"), item("ok"))
    assert ok.revision == store.revision


# -- lists ----------------------------------------------------------------------------


async def test_list_latest_is_in_key_order_and_scoped_to_prefix(store: SQLiteStore) -> None:
    for name in ("c", "a", "b"):
        await store.create(key(name), item(name))
    await store.create("/test/other/x", item("x"))
    await store.create("/test/items", item("no-slash"))
    page = await store.list(PREFIX)
    assert [i.key for i in page.items] == [key("a"), key("b"), key("c")]
    assert page.revision == store.revision
    assert page.more is False


async def test_list_at_older_revision_is_a_consistent_snapshot(store: SQLiteStore) -> None:
    a1 = await store.create(key("a"), item("a", 1))
    b1 = await store.create(key("b"), item("b", 1))
    snapshot = store.revision
    await store.update(key("a"), item("a", 2), expected_revision=a1.revision)
    await store.delete(key("b"), expected_revision=b1.revision)
    await store.create(key("c"), item("c", 1))

    old = await store.list(PREFIX, revision=snapshot)
    assert old.revision == snapshot
    assert [(i.key, i.revision, i.obj["n"]) for i in old.items] == [
        (key("a"), a1.revision, 1),
        (key("b"), b1.revision, 1),
    ]
    assert old.items[0].obj["metadata"]["resourceVersion"] == str(a1.revision)

    latest = await store.list(PREFIX)
    assert [(i.key, i.obj["n"]) for i in latest.items] == [(key("a"), 2), (key("c"), 1)]


async def test_list_at_a_revision_before_an_object_existed(store: SQLiteStore) -> None:
    await store.create(key("a"), item("a"))
    at = store.revision
    await store.create(key("b"), item("b"))
    page = await store.list(PREFIX, revision=at)
    assert [i.key for i in page.items] == [key("a")]


@pytest.mark.parametrize("at_old_revision", [False, True])
async def test_pagination_with_start_limit_and_more(
    store: SQLiteStore, at_old_revision: bool
) -> None:
    names = [f"n{i:02d}" for i in range(7)]
    for name in names:
        await store.create(key(name), item(name))
    snapshot = store.revision
    if at_old_revision:
        # Writes after the snapshot must not show up in any page read at it.
        await store.create(key("n00a"), item("n00a"))
        await store.delete(key("n03"), expected_revision=None)
    revision: int | None = snapshot if at_old_revision else None
    seen: list[str] = []
    start = ""
    pages = 0
    while True:
        page = await store.list(PREFIX, revision=revision, start=start, limit=3)
        pages += 1
        assert len(page.items) <= 3
        seen += [i.obj["metadata"]["name"] for i in page.items]
        if not page.more:
            break
        assert len(page.items) == 3
        start = page.items[-1].key + "\x00"
    assert seen == names
    assert pages == 3


async def test_limit_equal_to_count_reports_no_more(store: SQLiteStore) -> None:
    for name in ("a", "b"):
        await store.create(key(name), item(name))
    page = await store.list(PREFIX, limit=2)
    assert [i.key for i in page.items] == [key("a"), key("b")]
    assert page.more is False


async def test_list_of_empty_prefix_has_current_revision(store: SQLiteStore) -> None:
    await store.create("/elsewhere/x", item("x"))
    page = await store.list(PREFIX)
    assert page.items == []
    assert page.revision == store.revision


# -- watch ----------------------------------------------------------------------------


async def test_watch_replays_history_then_streams_live_events(store: SQLiteStore) -> None:
    start = store.revision
    a = await store.create(key("a"), item("a", 1))
    a2 = await store.update(key("a"), item("a", 2), expected_revision=a.revision)
    await store.create("/test/other/z", item("z"))
    watch = store.watch(PREFIX, start)
    events = aiter(watch)
    try:
        history = await collect(events, 2)
        assert [(e.type, e.revision) for e in history] == [
            (EventType.ADDED, a.revision),
            (EventType.MODIFIED, a2.revision),
        ]
        assert history[0].prev is None
        assert history[1].prev is not None
        assert history[1].prev.revision == a.revision
        assert history[1].prev.obj["n"] == 1
        assert history[1].object.obj["n"] == 2

        deleted = await store.delete(key("a"), expected_revision=a2.revision)
        b = await store.create(key("b"), item("b"))
        live = await collect(events, 2)
        assert [(e.type, e.revision) for e in live] == [
            (EventType.DELETED, deleted.revision),
            (EventType.ADDED, b.revision),
        ]
        assert live[0].object.obj["n"] == 2
        assert live[0].prev is not None
        assert live[0].prev.revision == a2.revision
    finally:
        await watch.close()


async def test_watch_from_current_revision_sees_only_later_events(store: SQLiteStore) -> None:
    await store.create(key("old"), item("old"))
    watch = store.watch(PREFIX, store.revision)
    events = aiter(watch)
    try:
        new = await store.create(key("new"), item("new"))
        event = await next_event(events)
        assert (event.type, event.object.key, event.revision) == (
            EventType.ADDED,
            key("new"),
            new.revision,
        )
    finally:
        await watch.close()


async def test_watch_during_concurrent_writes_has_no_gaps_or_duplicates(
    store: SQLiteStore,
) -> None:
    await store.create(key("counter"), item("counter", 0))
    writes = 150
    half_written = asyncio.Event()

    async def writer() -> None:
        for i in range(1, writes + 1):
            await store.update(key("counter"), item("counter", i), expected_revision=None)
            if i == writes // 2:
                half_written.set()

    task = asyncio.create_task(writer())
    await half_written.wait()
    start = store.revision
    watch = store.watch(PREFIX, start)
    events = aiter(watch)
    try:
        await task
        final = store.revision
        received = await collect(events, final - start)
        assert [e.revision for e in received] == list(range(start + 1, final + 1))
        assert all(e.type is EventType.MODIFIED for e in received)
        assert [e.object.obj["n"] for e in received][-1] == writes
        for event in received:
            assert event.prev is not None
            assert event.prev.revision == event.revision - 1
            assert event.prev.obj["n"] == event.object.obj["n"] - 1
    finally:
        await watch.close()


async def test_watch_ends_when_closed(store: SQLiteStore) -> None:
    watch = store.watch(PREFIX, store.revision)
    events = aiter(watch)
    pending = asyncio.ensure_future(anext(events))
    await asyncio.sleep(0)
    await watch.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(pending, HANG)


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
        for _ in range(3):
            await asyncio.sleep(0)
        assert watch.progress() == created.revision
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


async def test_explicit_compaction_keeps_state_at_the_compacted_revision(
    store: SQLiteStore,
) -> None:
    a = await store.create(key("a"), item("a", 1))
    b = await store.create(key("b"), item("b", 1))
    await store.update(key("a"), item("a", 2), expected_revision=a.revision)
    await store.delete(key("b"), expected_revision=b.revision)
    c = await store.create(key("c"), item("c", 1))
    await store.compact(c.revision - 1)
    assert store.compacted_revision == c.revision - 1
    with pytest.raises(RevisionCompactedError):
        await store.list(PREFIX, revision=a.revision)
    at_compacted = await store.list(PREFIX, revision=c.revision - 1)
    assert [(i.key, i.obj["n"]) for i in at_compacted.items] == [(key("a"), 2)]
    latest = await store.list(PREFIX)
    assert [i.key for i in latest.items] == [key("a"), key("c")]


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


# -- concurrency and group commit ---------------------------------------------------------


async def test_concurrent_read_modify_write_loses_no_update(store: SQLiteStore) -> None:
    await store.create(key("counter"), item("counter", 0))
    tasks = 50
    conflicts = 0

    async def increment() -> None:
        nonlocal conflicts
        while True:
            current = await store.get(key("counter"))
            assert current is not None
            obj = current.copy()
            obj["n"] += 1
            try:
                await store.update(key("counter"), obj, expected_revision=current.revision)
                return
            except PreconditionFailedError:
                conflicts += 1

    await asyncio.gather(*(increment() for _ in range(tasks)))
    final = await store.get(key("counter"))
    assert final is not None
    assert final.obj["n"] == tasks
    # Every successful increment took exactly one revision.
    assert final.revision == 1 + tasks + 1


async def test_group_commit_fails_a_bad_write_alone(store: SQLiteStore) -> None:
    base = await store.create(key("target"), item("target", 0))
    await store.create(key("taken"), item("taken"))
    # Hold the database write lock so the writer thread blocks on its first batch while
    # the writes under test queue up behind it and are committed as one batch.
    blocker = sqlite3.connect(store.path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        first = asyncio.ensure_future(store.create(key("first"), item("first")))
        await asyncio.sleep(0.2)
        results = asyncio.gather(
            store.create(key("g1"), item("g1")),
            store.update(key("target"), item("target", 1), expected_revision=base.revision - 1),
            store.create(key("g2"), item("g2")),
            store.create(key("taken"), item("taken")),
            store.update(key("target"), item("target", 2), expected_revision=base.revision),
            store.create(key("g3"), item("g3")),
            return_exceptions=True,
        )
        await asyncio.sleep(0)
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

"""One storage conformance suite: every backend, with and without the watch cache.

Each test runs against ``sqlite``, ``etcd``, ``sqlite+cache`` and ``etcd+cache`` and asserts
the Store protocol's semantics: revisions, preconditions, snapshot lists and pagination,
watches from a revision, compaction (410 Gone), concurrent writers. The last part drives
the generic registry and watch stream on each backend for what clients see: selectors,
bookmarks and the 410 ERROR event.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from apiserver.kinds.resourceslicepatch import ResourceSlicePatchStrategy
from apiserver.machinery import (
    ListOptions,
    Registry,
    WatchItem,
    WatchRequest,
    WatchStream,
    WriteOptions,
    parse_field_selector,
    parse_label_selector,
)
from apiserver.storage import (
    EventType,
    KeyExistsError,
    KeyNotFoundError,
    PreconditionFailedError,
    RevisionCompactedError,
    Store,
)
from devtools.waiting import eventually
from tests.storage.items import HANG, PREFIX, collect, item, key, next_event
from tests.unit.builders import rsp_body

# -- create, get, update, delete ----------------------------------------------------------


async def test_create_sets_revision_and_resource_version(store: Store) -> None:
    before = await store.current_revision()
    stored = await store.create(key("a"), item("a"))
    assert stored.revision > before
    assert stored.key == key("a")
    assert stored.obj["metadata"]["resourceVersion"] == str(stored.revision)
    assert store.revision == stored.revision
    assert await store.current_revision() == stored.revision


async def test_get_returns_the_object_with_its_revision_or_none(store: Store) -> None:
    created = await store.create(key("a"), item("a", 7))
    got = await store.get(key("a"))
    assert got is not None
    assert got.revision == created.revision
    assert got.obj == {"metadata": {"name": "a", "resourceVersion": str(created.revision)}, "n": 7}
    assert await store.get(key("missing")) is None


async def test_copy_is_independent_of_the_shared_parse(store: Store) -> None:
    await store.create(key("a"), item("a", 1))
    got = await store.get(key("a"))
    assert got is not None
    mutable = got.copy()
    mutable["n"] = 99
    assert got.obj["n"] == 1


async def test_update_replaces_and_bumps_revision(store: Store) -> None:
    created = await store.create(key("a"), item("a", 1))
    updated = await store.update(key("a"), item("a", 2), expected_revision=created.revision)
    assert updated.revision > created.revision
    assert updated.obj["metadata"]["resourceVersion"] == str(updated.revision)
    got = await store.get(key("a"))
    assert got is not None
    assert got.obj["n"] == 2
    assert got.obj["metadata"]["resourceVersion"] == str(updated.revision)


async def test_update_without_precondition_always_applies(store: Store) -> None:
    await store.create(key("a"), item("a", 1))
    await store.update(key("a"), item("a", 2), expected_revision=None)
    got = await store.get(key("a"))
    assert got is not None
    assert got.obj["n"] == 2


async def test_delete_returns_last_state_at_the_deletion_revision(store: Store) -> None:
    created = await store.create(key("a"), item("a", 5))
    deleted = await store.delete(key("a"), expected_revision=created.revision)
    assert deleted.revision == created.revision + 1
    assert deleted.obj["n"] == 5
    assert deleted.obj["metadata"]["resourceVersion"] == str(deleted.revision)
    assert await store.get(key("a")) is None


async def test_create_after_delete_is_allowed(store: Store) -> None:
    await store.create(key("a"), item("a", 1))
    await store.delete(key("a"), expected_revision=None)
    again = await store.create(key("a"), item("a", 2))
    got = await store.get(key("a"))
    assert got is not None
    assert got.revision == again.revision
    assert got.obj["n"] == 2


# -- preconditions --------------------------------------------------------------------------


async def test_create_existing_key_raises_key_exists(store: Store) -> None:
    first = await store.create(key("a"), item("a", 1))
    with pytest.raises(KeyExistsError) as info:
        await store.create(key("a"), item("a", 2))
    assert info.value.key == key("a")
    got = await store.get(key("a"))
    assert got is not None
    assert (got.revision, got.obj["n"]) == (first.revision, 1)
    assert await store.current_revision() == first.revision


@pytest.mark.parametrize("op", ["update", "delete"])
async def test_write_of_missing_key_raises_key_not_found(store: Store, op: str) -> None:
    write = (
        store.update(key("nope"), item("nope"), expected_revision=None)
        if op == "update"
        else store.delete(key("nope"), expected_revision=None)
    )
    with pytest.raises(KeyNotFoundError) as info:
        await write
    assert info.value.key == key("nope")


@pytest.mark.parametrize("op", ["update", "delete"])
async def test_stale_expected_revision_raises_precondition_failed(store: Store, op: str) -> None:
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
    assert await store.current_revision() == second.revision


async def test_failed_write_does_not_consume_a_revision(store: Store) -> None:
    a = await store.create(key("a"), item("a"))
    with pytest.raises(KeyExistsError):
        await store.create(key("a"), item("a"))
    b = await store.create(key("b"), item("b"))
    assert b.revision == a.revision + 1


async def test_unencodable_object_fails_and_stores_nothing(store: Store) -> None:
    with pytest.raises(TypeError):
        await store.create(key("bad"), {"metadata": {}, "value": object()})
    assert await store.get(key("bad")) is None
    ok = await store.create(key("ok"), item("ok"))
    assert ok.revision == store.revision


# -- lists ----------------------------------------------------------------------------------


async def test_list_latest_is_in_key_order_and_scoped_to_prefix(store: Store) -> None:
    for name in ("c", "a", "b"):
        await store.create(key(name), item(name))
    await store.create("/test/other/x", item("x"))
    last = await store.create("/test/items", item("no-slash"))
    page = await store.list(PREFIX)
    assert [i.key for i in page.items] == [key("a"), key("b"), key("c")]
    assert [i.obj["metadata"]["name"] for i in page.items] == ["a", "b", "c"]
    assert page.revision >= last.revision
    assert page.more is False


async def test_list_reflects_every_acknowledged_write(store: Store) -> None:
    """A read with no revision sees every write acknowledged before it (consistent read)."""
    for i in range(20):
        created = await store.create(key(f"o{i:02d}"), item(f"o{i:02d}", i))
        page = await store.list(PREFIX)
        assert [o.obj["n"] for o in page.items] == list(range(i + 1))
        assert page.revision >= created.revision
        got = await store.get(key(f"o{i:02d}"))
        assert got is not None
        assert got.revision == created.revision


async def test_list_at_older_revision_is_a_consistent_snapshot(store: Store) -> None:
    a1 = await store.create(key("a"), item("a", 1))
    b1 = await store.create(key("b"), item("b", 1))
    snapshot = b1.revision
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


async def test_list_at_a_revision_before_an_object_existed(store: Store) -> None:
    a = await store.create(key("a"), item("a"))
    await store.create(key("b"), item("b"))
    page = await store.list(PREFIX, revision=a.revision)
    assert [i.key for i in page.items] == [key("a")]


@pytest.mark.parametrize("at_old_revision", [False, True])
async def test_pagination_with_start_limit_and_more(store: Store, at_old_revision: bool) -> None:
    names = [f"n{i:02d}" for i in range(7)]
    for name in names:
        last = await store.create(key(name), item(name))
    snapshot = last.revision
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
        # Later pages read at the first page's revision, as continue tokens do.
        revision = page.revision
    assert seen == names
    assert pages == 3


async def test_limit_equal_to_count_reports_no_more(store: Store) -> None:
    for name in ("a", "b"):
        await store.create(key(name), item(name))
    page = await store.list(PREFIX, limit=2)
    assert [i.key for i in page.items] == [key("a"), key("b")]
    assert page.more is False


async def test_list_of_empty_prefix_is_at_a_current_revision(store: Store) -> None:
    written = await store.create("/elsewhere/x", item("x"))
    page = await store.list(PREFIX)
    assert page.items == []
    assert page.revision >= written.revision


async def test_list_of_one_key_as_prefix(store: Store) -> None:
    """How the registry reads one name: the key as prefix, limit 1."""
    await store.create(key("ab"), item("ab"))
    a = await store.create(key("a"), item("a"))
    page = await store.list(key("a"), limit=1)
    assert [(i.key, i.revision) for i in page.items] == [(key("a"), a.revision)]


# -- watch ----------------------------------------------------------------------------------


async def test_watch_replays_history_then_streams_live_events(store: Store) -> None:
    start = await store.current_revision()
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
        assert history[1].object.obj["metadata"]["resourceVersion"] == str(a2.revision)

        deleted = await store.delete(key("a"), expected_revision=a2.revision)
        b = await store.create(key("b"), item("b"))
        live = await collect(events, 2)
        assert [(e.type, e.revision) for e in live] == [
            (EventType.DELETED, deleted.revision),
            (EventType.ADDED, b.revision),
        ]
        assert live[0].object.obj["n"] == 2
        assert live[0].object.obj["metadata"]["resourceVersion"] == str(deleted.revision)
        assert live[0].prev is not None
        assert live[0].prev.revision == a2.revision
    finally:
        await watch.close()


async def test_watch_from_current_revision_sees_only_later_events(store: Store) -> None:
    old = await store.create(key("old"), item("old"))
    watch = store.watch(PREFIX, old.revision)
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


async def test_watch_during_concurrent_writes_has_no_gaps_or_duplicates(store: Store) -> None:
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
        assert received[-1].object.obj["n"] == writes
        for event in received:
            assert event.prev is not None
            assert event.prev.revision == event.revision - 1
            assert event.prev.obj["n"] == event.object.obj["n"] - 1
    finally:
        await watch.close()


async def test_watch_ends_when_closed(store: Store) -> None:
    watch = store.watch(PREFIX, await store.current_revision())
    events = aiter(watch)
    pending = asyncio.ensure_future(anext(events))
    await eventually(lambda: watch.progress() is not None, "the watch to wait for events")
    await watch.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(pending, HANG)


async def test_watch_progress_covers_delivered_events(store: Store) -> None:
    start = await store.current_revision()
    created = await store.create(key("a"), item("a"))
    watch = store.watch(PREFIX, start)
    events = aiter(watch)
    try:
        first = await next_event(events)
        assert first.revision == created.revision
        # Waiting for the next event means everything before it was delivered.
        pending = asyncio.ensure_future(anext(events))
        progress = await eventually(watch.progress, "the watch to report its progress")
        assert progress >= created.revision
        mine = await store.create(key("b"), item("b"))
        event = await asyncio.wait_for(pending, HANG)
        assert event.revision == mine.revision
    finally:
        await watch.close()


async def test_many_watchers_each_get_every_event(store: Store) -> None:
    start = await store.current_revision()
    watches = [store.watch(PREFIX, start) for _ in range(20)]
    streams = [aiter(w) for w in watches]
    try:
        written = [await store.create(key(f"w{i}"), item(f"w{i}", i)) for i in range(5)]
        for stream in streams:
            got = await collect(stream, 5)
            assert [(e.object.key, e.revision) for e in got] == [
                (w.key, w.revision) for w in written
            ]
    finally:
        for w in watches:
            await w.close()


# -- compaction -----------------------------------------------------------------------------


async def test_compaction_makes_older_revisions_gone(store: Store) -> None:
    a = await store.create(key("a"), item("a", 1))
    b = await store.create(key("b"), item("b", 1))
    a2 = await store.update(key("a"), item("a", 2), expected_revision=a.revision)
    await store.delete(key("b"), expected_revision=b.revision)
    c = await store.create(key("c"), item("c", 1))
    await store.compact(c.revision - 1)
    assert store.compacted_revision >= c.revision - 1

    with pytest.raises(RevisionCompactedError):
        await store.list(PREFIX, revision=a.revision)
    with pytest.raises(RevisionCompactedError):
        await asyncio.wait_for(anext(aiter(store.watch(PREFIX, a.revision))), HANG)

    # The state at the compacted revision and the history after it are intact.
    at_compacted = await store.list(PREFIX, revision=c.revision - 1)
    assert [(i.key, i.obj["n"]) for i in at_compacted.items] == [(key("a"), 2)]
    assert at_compacted.items[0].revision == a2.revision
    watch = store.watch(PREFIX, c.revision - 1)
    try:
        event = await next_event(aiter(watch))
        assert (event.type, event.revision) == (EventType.ADDED, c.revision)
    finally:
        await watch.close()
    latest = await store.list(PREFIX)
    assert [i.key for i in latest.items] == [key("a"), key("c")]


# -- concurrency ----------------------------------------------------------------------------


async def test_concurrent_read_modify_write_loses_no_update(store: Store) -> None:
    created = await store.create(key("counter"), item("counter", 0))
    tasks = 40
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
    assert conflicts > 0
    # Every successful increment took exactly one revision, and no failed one took any.
    assert final.revision == created.revision + tasks


async def test_concurrent_creates_of_one_name_admit_exactly_one(store: Store) -> None:
    outcomes = await asyncio.gather(
        *(store.create(key("only"), item("only", i)) for i in range(20)), return_exceptions=True
    )
    winners = [o for o in outcomes if not isinstance(o, BaseException)]
    assert len(winners) == 1
    assert all(isinstance(o, KeyExistsError) for o in outcomes if isinstance(o, BaseException))
    got = await store.get(key("only"))
    assert got is not None
    assert got.obj["n"] == winners[0].obj["n"]


# -- multi-key writes: all or none ------------------------------------------------------------

LOCKS = "/test/locks/"


async def test_create_many_stores_every_key_in_one_transaction(store: Store) -> None:
    start = await store.current_revision()
    created = await store.create_many(
        [(key("a"), item("a", 1)), (LOCKS + "x", item("x")), (LOCKS + "y", item("y"))]
    )
    assert [s.key for s in created] == [key("a"), LOCKS + "x", LOCKS + "y"]
    assert [s.obj["metadata"]["resourceVersion"] for s in created] == [
        str(s.revision) for s in created
    ]
    # One transaction: nothing else between its revisions, which end at the store's head.
    revisions = [s.revision for s in created]
    assert revisions == sorted(revisions)
    assert start < revisions[0]
    assert revisions[-1] - revisions[0] <= len(created) - 1
    assert await store.current_revision() == revisions[-1]
    for stored in created:
        got = await store.get(stored.key)
        assert got is not None
        assert got.revision == stored.revision


async def test_create_many_with_one_key_taken_stores_nothing(store: Store) -> None:
    taken = await store.create(LOCKS + "y", item("y", 7))
    with pytest.raises(KeyExistsError) as info:
        await store.create_many(
            [(key("a"), item("a")), (LOCKS + "x", item("x")), (LOCKS + "y", item("y"))]
        )
    assert info.value.key == LOCKS + "y"
    assert await store.get(key("a")) is None
    assert await store.get(LOCKS + "x") is None
    got = await store.get(LOCKS + "y")
    assert got is not None
    assert (got.revision, got.obj["n"]) == (taken.revision, 7)
    assert await store.current_revision() == taken.revision


async def test_create_many_names_the_first_key_taken(store: Store) -> None:
    await store.create(LOCKS + "z", item("z"))
    await store.create(LOCKS + "x", item("x"))
    with pytest.raises(KeyExistsError) as info:
        await store.create_many([(LOCKS + "x", item("x")), (LOCKS + "z", item("z"))])
    assert info.value.key == LOCKS + "x"


async def test_multi_key_writes_refuse_a_key_listed_twice(store: Store) -> None:
    with pytest.raises(ValueError, match="twice"):
        await store.create_many([(key("a"), item("a")), (key("a"), item("a"))])
    with pytest.raises(ValueError, match="twice"):
        await store.delete_many([(key("a"), None), (key("a"), None)])
    assert await store.get(key("a")) is None


async def test_delete_many_removes_every_key_at_its_revision(store: Store) -> None:
    a, x = await store.create_many([(key("a"), item("a", 1)), (LOCKS + "x", item("x", 2))])
    deleted = await store.delete_many([(key("a"), a.revision), (LOCKS + "x", None)])
    assert [(d.key, d.obj["n"]) for d in deleted] == [(key("a"), 1), (LOCKS + "x", 2)]
    assert all(d.revision > x.revision for d in deleted)
    assert [d.obj["metadata"]["resourceVersion"] for d in deleted] == [
        str(d.revision) for d in deleted
    ]
    assert await store.get(key("a")) is None
    assert await store.get(LOCKS + "x") is None
    assert await store.current_revision() == deleted[-1].revision


@pytest.mark.parametrize("failure", ["missing", "stale"])
async def test_delete_many_with_one_failing_key_deletes_nothing(store: Store, failure: str) -> None:
    a, x = await store.create_many([(key("a"), item("a")), (LOCKS + "x", item("x"))])
    if failure == "missing":
        items = [(key("a"), a.revision), (LOCKS + "x", None), (LOCKS + "gone", None)]
        error: type[Exception] = KeyNotFoundError
    else:
        items = [(key("a"), a.revision), (LOCKS + "x", x.revision - 1)]
        error = PreconditionFailedError
    with pytest.raises(error) as info:
        await store.delete_many(items)
    assert info.value.key == items[-1][0]
    assert await store.get(key("a")) is not None
    assert await store.get(LOCKS + "x") is not None
    assert await store.current_revision() == x.revision


async def test_watch_sees_every_key_of_a_multi_key_write(store: Store) -> None:
    start = await store.current_revision()
    await store.create(LOCKS + "warm", item("warm"))
    # A get warms the cache of the prefix first, so events arrive through it.
    assert await store.get(LOCKS + "warm") is not None
    watch = store.watch(LOCKS, start)
    events = aiter(watch)
    try:
        assert (await next_event(events)).object.key == LOCKS + "warm"
        created = await store.create_many(
            [(LOCKS + "x", item("x")), (LOCKS + "y", item("y")), (key("a"), item("a"))]
        )
        added = await collect(events, 2)
        assert [(e.type, e.object.key, e.revision) for e in added] == [
            (EventType.ADDED, LOCKS + "x", created[0].revision),
            (EventType.ADDED, LOCKS + "y", created[1].revision),
        ]
        await eventually(lambda: _listed(store, LOCKS, {"warm", "x", "y"}))
        deleted = await store.delete_many([(LOCKS + "x", None), (LOCKS + "y", None)])
        gone = await collect(events, 2)
        assert [(e.type, e.object.key, e.revision) for e in gone] == [
            (EventType.DELETED, LOCKS + "x", deleted[0].revision),
            (EventType.DELETED, LOCKS + "y", deleted[1].revision),
        ]
        await eventually(lambda: _listed(store, LOCKS, {"warm"}))
    finally:
        await watch.close()


async def _listed(store: Store, prefix: str, names: set[str]) -> bool:
    page = await store.list(prefix)
    return {s.obj["metadata"]["name"] for s in page.items} == names


async def test_concurrent_multi_key_creates_never_share_a_key(store: Store) -> None:
    """Forty writers each want three of ten locks, in their own order: every lock is held
    by at most one winner, and the winners' objects exist exactly when their locks do."""
    wanted = [[(i * 3 + j) % 10 for j in range(3)][:: 1 if i % 2 else -1] for i in range(40)]
    outcomes = await asyncio.gather(
        *(
            store.create_many(
                [(key(f"r{i}"), item(f"r{i}"))]
                + [(LOCKS + f"d{d}", item(f"d{d}", i)) for d in locks]
            )
            for i, locks in enumerate(wanted)
        ),
        return_exceptions=True,
    )
    winners = [i for i, o in enumerate(outcomes) if not isinstance(o, BaseException)]
    assert winners
    assert all(isinstance(o, KeyExistsError) for o in outcomes if isinstance(o, BaseException))
    held = [d for i in winners for d in wanted[i]]
    assert len(held) == len(set(held))
    for i, locks in enumerate(wanted):
        exists = await store.get(key(f"r{i}")) is not None
        assert exists == (i in winners)
        for d in locks if exists else ():
            got = await store.get(LOCKS + f"d{d}")
            assert got is not None
            assert got.obj["n"] == i


# -- what clients see: selectors, bookmarks, 410 through the registry -------------------------

GROUP = "resource.k8s.io"
OPTS = WriteOptions()


def patch_body(name: str, tier: str, priority: int = 1) -> dict[str, Any]:
    return rsp_body(name, priority, labels={"tier": tier})


@pytest.fixture
def registry(store: Store) -> Registry:
    return Registry(ResourceSlicePatchStrategy.for_group(GROUP), store)


def options(labels: str = "", fields: str = "", **kw: Any) -> ListOptions:
    getters = ResourceSlicePatchStrategy.for_group(GROUP).field_getters()
    return ListOptions(parse_label_selector(labels), parse_field_selector(fields, getters), **kw)


async def items_of(stream: WatchStream, count: int) -> list[WatchItem]:
    out: list[WatchItem] = []
    iterator = aiter(stream.items())

    async def take() -> None:
        while len(out) < count:
            out.append(await anext(iterator))

    try:
        await asyncio.wait_for(take(), HANG)
    finally:
        await iterator.aclose()  # type: ignore[attr-defined]
    return out


async def test_list_with_selectors_and_pagination(registry: Registry) -> None:
    for i in range(9):
        await registry.create(None, patch_body(f"p{i}", "gold" if i % 3 == 0 else "x"), OPTS)
    first = await registry.list(None, options("tier=gold", limit=2))
    assert [o.obj["metadata"]["name"] for o in first.items] == ["p0", "p3"]
    assert first.continue_token
    rest = await registry.list(
        None, options("tier=gold", limit=2, continue_token=first.continue_token)
    )
    assert [o.obj["metadata"]["name"] for o in rest.items] == ["p6"]
    assert rest.revision == first.revision
    named = await registry.list(None, options(fields="metadata.name=p4"))
    assert [o.obj["metadata"]["name"] for o in named.items] == ["p4"]
    not_gold = await registry.list(None, options("tier!=gold"))
    assert len(not_gold.items) == 6


async def test_watch_with_selector_turns_updates_into_added_and_deleted(
    registry: Registry,
) -> None:
    created = await registry.create(None, patch_body("w", "x"), OPTS)
    stream = await WatchStream.open(
        registry,
        registry.resource,
        None,
        WatchRequest(options("tier=gold", resource_version=str(created.obj.revision))),
    )
    collected = asyncio.ensure_future(items_of(stream, 2))  # from the created revision on
    gold = patch_body("w", "gold")
    gold["metadata"]["resourceVersion"] = str(created.obj.revision)
    now_gold = await registry.update(None, "w", gold, OPTS)
    back = patch_body("w", "x")
    back["metadata"]["resourceVersion"] = str(now_gold.obj.revision)
    left = await registry.update(None, "w", back, OPTS)
    got = await collected
    assert [(i.type, i.obj.revision if i.obj else 0) for i in got] == [
        ("ADDED", now_gold.obj.revision),
        ("DELETED", left.obj.revision),
    ]


async def test_watch_sends_initial_events_then_bookmark_then_live(registry: Registry) -> None:
    await registry.create(None, patch_body("a", "x"), OPTS)
    await registry.create(None, patch_body("b", "x"), OPTS)
    stream = await WatchStream.open(
        registry,
        registry.resource,
        None,
        WatchRequest(
            options(resource_version=""),
            send_initial_events=True,
            allow_bookmarks=True,
            bookmark_interval=0.05,
        ),
    )
    # The initial events are the list taken when the stream opened: c comes after them.
    collected = asyncio.ensure_future(items_of(stream, 4))
    c = await registry.create(None, patch_body("c", "x"), OPTS)
    got = await collected
    assert [(i.type, i.obj.obj["metadata"]["name"] if i.obj else None) for i in got] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("BOOKMARK", None),
        ("ADDED", "c"),
    ]
    assert got[2].initial_end
    assert got[3].obj is not None
    assert got[3].obj.revision == c.obj.revision


async def test_idle_watch_gets_bookmarks_at_its_revision(registry: Registry) -> None:
    created = await registry.create(None, patch_body("a", "x"), OPTS)
    stream = await WatchStream.open(
        registry,
        registry.resource,
        None,
        WatchRequest(
            options(resource_version="0"),
            send_initial_events=False,
            allow_bookmarks=True,
            bookmark_interval=0.05,
        ),
    )
    started = stream.start_revision
    collected = asyncio.ensure_future(items_of(stream, 2))  # from the start revision on
    b = await registry.create(None, patch_body("b", "x"), OPTS)
    got = await collected
    assert started >= created.obj.revision
    assert got[0].type == "ADDED"
    assert got[1].type == "BOOKMARK"
    assert got[1].revision >= b.obj.revision


async def test_watch_from_a_compacted_revision_ends_with_410(
    registry: Registry, store: Store
) -> None:
    first = await registry.create(None, patch_body("a", "x"), OPTS)
    for i in range(3):
        await registry.create(None, patch_body(f"more{i}", "x"), OPTS)
    await store.compact(store.revision)
    stream = await WatchStream.open(
        registry,
        registry.resource,
        None,
        WatchRequest(options(resource_version=str(first.obj.revision))),
    )
    got = await items_of(stream, 1)
    assert got[0].type == "ERROR"
    assert got[0].error is not None
    assert got[0].error.code == 410

"""Fanout: events reach the subscribers of their key range, in order; slow ones are cut off."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from apiserver.server.app import APIServer, ServerSettings, build_app
from apiserver.server.cluster import StandaloneCluster
from apiserver.storage import EventType, StoredObject, WatchEvent
from apiserver.storage.fanout import Fanout
from apiserver.storage.sqlite import SQLiteStore
from apiserver.storage.terminations import TERMINATED, resource_of
from devtools.waiting import started

GROUP = "resource.k8s.io"

HANG = 30.0


def event(key: str, revision: int) -> WatchEvent:
    return WatchEvent(EventType.ADDED, StoredObject(key, revision, b"{}"))


async def test_subscribers_get_events_of_their_prefix_in_order() -> None:
    fanout = Fanout()
    items = fanout.subscribe("/g/items/", "/g/items0")
    others = fanout.subscribe("/g/others/", "/g/others0")
    fanout.publish(event("/g/items/a", 2))
    fanout.publish(event("/g/others/x", 3))
    fanout.publish(event("/g/items/b", 4))
    fanout.publish(event("/g/itemsx", 5))
    got = [await asyncio.wait_for(items.next(), HANG) for _ in range(2)]
    assert [(e.object.key if e else None) for e in got] == ["/g/items/a", "/g/items/b"]
    assert items.empty()
    other = await asyncio.wait_for(others.next(), HANG)
    assert other is not None
    assert other.object.key == "/g/others/x"
    assert fanout.revision == 5


async def test_every_subscriber_gets_the_same_event_object() -> None:
    fanout = Fanout()
    first = fanout.subscribe("/a/", "/a0")
    second = fanout.subscribe("/a/", "/a0")
    published = event("/a/x", 2)
    fanout.publish(published)
    assert await first.next() is published
    assert await second.next() is published


async def test_slow_subscriber_is_cut_off_after_max_pending() -> None:
    fanout = Fanout(max_pending=3)
    slow = fanout.subscribe("/a/", "/a0")
    fast = fanout.subscribe("/a/", "/a0")
    received: list[int] = []
    for revision in range(2, 8):
        fanout.publish(event("/a/x", revision))
        got = await fast.next()
        assert got is not None
        received.append(got.revision)
    assert received == [2, 3, 4, 5, 6, 7]
    assert fast.overflowed is False
    assert slow.overflowed is True
    assert slow.closed is True
    # An overflowed subscriber ends at once, even with events still queued: its client
    # re-watches from the last revision it saw.
    assert await asyncio.wait_for(slow.next(), HANG) is None


async def test_subscriber_exactly_at_max_pending_is_kept() -> None:
    fanout = Fanout(max_pending=3)
    sub = fanout.subscribe("/a/", "/a0")
    for revision in (2, 3, 4):
        fanout.publish(event("/a/x", revision))
    assert sub.overflowed is False
    got = [await sub.next() for _ in range(3)]
    assert [e.revision for e in got if e is not None] == [2, 3, 4]


async def test_waiting_subscriber_wakes_on_publish_and_on_close() -> None:
    fanout = Fanout()
    sub = fanout.subscribe("/a/", "/a0")
    waiting = await started(sub.next())
    assert not waiting.done()
    fanout.publish(event("/a/x", 2))
    got = await asyncio.wait_for(waiting, HANG)
    assert got is not None
    assert got.revision == 2

    waiting = await started(sub.next())
    sub.close()
    assert await asyncio.wait_for(waiting, HANG) is None
    assert len(fanout) == 0


async def test_close_all_ends_every_subscription() -> None:
    fanout = Fanout()
    subs = [fanout.subscribe("/a/", "/a0") for _ in range(3)]
    assert len(fanout) == 3
    fanout.close_all()
    assert len(fanout) == 0
    assert [await s.next() for s in subs] == [None, None, None]
    fanout.publish(event("/a/x", 2))
    assert all(s.empty() for s in subs)


async def test_a_cut_off_watcher_is_logged_and_counted_by_resource(
    caplog: pytest.LogCaptureFixture,
) -> None:
    resource = "resourceslices.resource.k8s.io"
    before = TERMINATED.counts().get(resource, 0)
    fanout = Fanout(max_pending=2)
    slow = fanout.subscribe("/resource.k8s.io/resourceslices/", "/resource.k8s.io/resourceslices0")
    with caplog.at_level(logging.WARNING, logger="apiserver.watch"):
        for revision in (1, 2, 3, 4):
            fanout.publish(event(f"/resource.k8s.io/resourceslices/s{revision}", revision))
    assert await asyncio.wait_for(slow.next(), HANG) is None  # cut off
    assert TERMINATED.counts()[resource] == before + 1  # once, however far behind it fell
    assert any(resource in r.getMessage() for r in caplog.records)


async def test_terminated_watchers_are_on_metrics(store: SQLiteStore) -> None:
    TERMINATED.record("/resource.k8s.io/deviceclasses/", "a test")
    served = StandaloneCluster(store, GROUP, authenticator=None, authorizer=None).served()
    app = build_app(APIServer(store, served, ServerSettings()), None)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://test") as client:
        text = (await client.get("/metrics")).text
    count = TERMINATED.counts()["deviceclasses.resource.k8s.io"]
    assert (
        f'apiserver_terminated_watchers_total{{resource="deviceclasses.resource.k8s.io"}} {count}.0'
        in text
    )


def test_resource_names_follow_kubernetes() -> None:
    assert resource_of("/resource.k8s.io/resourceslices/") == "resourceslices.resource.k8s.io"
    assert resource_of("/core/events/default/") == "events"


def sized(key: str, revision: int, size: int) -> WatchEvent:
    return WatchEvent(EventType.ADDED, StoredObject(key, revision, b" " * size))


async def test_a_buffer_that_stays_full_is_cut_and_freed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A tenth of max_pending (10 events) is full; with no time allowed, staying full for
    # one more event is too long.
    fanout = Fanout(max_pending=100, stall_timeout=0.0)
    stalled = fanout.subscribe("/a/", "/a0")
    cuts: list[str] = []
    stalled.on_cut = lambda: cuts.append("cut")
    for revision in range(1, 11):  # ten: full from the tenth on
        fanout.publish(event(f"/a/x{revision}", revision))
    assert cuts == []
    with caplog.at_level(logging.WARNING, logger="apiserver.watch"):
        fanout.publish(event("/a/x11", 11))
    assert cuts == ["cut"]
    assert stalled.empty()  # what it held is freed at once
    assert len(fanout) == 0
    assert await asyncio.wait_for(stalled.next(), HANG) is None
    assert any("due to unresponsiveness" in r.getMessage() for r in caplog.records)


async def test_a_buffer_that_drains_is_not_cut() -> None:
    fanout = Fanout(max_pending=100, stall_timeout=0.0)
    reader = fanout.subscribe("/a/", "/a0")
    reader.on_cut = lambda: pytest.fail("a reader that keeps up was cut")
    revision = 0
    for _ in range(5):
        for _ in range(10):  # full again each round...
            revision += 1
            fanout.publish(event(f"/a/x{revision}", revision))
        for _ in range(10):  # ...and read down each round
            assert await asyncio.wait_for(reader.next(), HANG) is not None
    assert len(fanout) == 1


async def test_a_buffer_over_its_byte_bound_is_cut_at_once() -> None:
    fanout = Fanout(max_pending=1_000, max_pending_bytes=10_000, stall_timeout=3600.0)
    slow = fanout.subscribe("/a/", "/a0")
    fanout.publish(sized("/a/x1", 1, 6_000))
    assert not slow.closed
    fanout.publish(sized("/a/x2", 2, 6_000))  # 12,000 bytes unread: over the bound
    assert slow.closed
    assert slow.empty()

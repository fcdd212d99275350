"""machinery/watch.py: a slow client cannot make the server buffer without bound, a watch
with selectors gets bookmarks even while every event is filtered out, and the watch of a
client that went away is closed as soon as its response ends."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from apiserver.kinds.resourceslicepatch import ResourceSlicePatchStrategy
from apiserver.machinery import (
    ListOptions,
    Registry,
    WatchRequest,
    WatchStream,
    WriteOptions,
    parse_label_selector,
)
from apiserver.machinery import watch as watch_module
from apiserver.server.app import APIServer, ServerSettings, build_app
from apiserver.storage.sqlite import SQLiteStore
from devtools.waiting import eventually
from tests.unit.builders import rsp_body

GROUP = "resource.k8s.io"
OPTS = WriteOptions()
HANG = 30.0


def body(name: str, tier: str) -> dict[str, Any]:
    return rsp_body(name, labels={"tier": tier})


@pytest.fixture
async def registry(tmp_path: Path) -> AsyncIterator[Registry]:
    store = SQLiteStore(tmp_path / "watch.db")
    await store.start()
    try:
        yield Registry(ResourceSlicePatchStrategy.for_group(GROUP), store)
    finally:
        await store.close()


async def test_a_slow_watcher_is_cut_off_instead_of_buffering_everything(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the stream's queue and the store's subscription both bounded, a client that does
    not read gets its watch ended (it re-watches) rather than every event held for it."""
    monkeypatch.setattr(watch_module, "QUEUE_LIMIT", 4)
    store = registry.store
    assert isinstance(store, SQLiteStore)
    monkeypatch.setattr(store._fanout, "max_pending", 8)
    stream = await WatchStream.open(
        registry,
        registry.resource,
        None,
        WatchRequest(ListOptions(resource_version=str(store.revision))),
    )
    items = aiter(stream.items())
    first = asyncio.ensure_future(anext(items))
    await registry.create(None, body("p0", "a"), OPTS)
    assert (await asyncio.wait_for(first, HANG)).type == "ADDED"
    for i in range(1, 60):  # the client reads nothing meanwhile
        await registry.create(None, body(f"p{i}", "a"), OPTS)

    async def drain() -> int:
        return sum([1 async for _ in items])

    delivered = await asyncio.wait_for(drain(), HANG)  # the stream ends by itself
    assert delivered <= 4 + 8 + 1  # the queue, the subscription, one in the pump's hands
    assert delivered < 59


async def test_bookmarks_arrive_while_every_event_is_filtered_out(registry: Registry) -> None:
    """Events that do not match the selector keep coming, and bookmarks still advance."""
    request = WatchRequest(
        ListOptions(
            label_selector=parse_label_selector("tier=wanted"),
            resource_version=str(registry.store.revision),
        ),
        allow_bookmarks=True,
        bookmark_interval=0.02,
    )
    stream = await WatchStream.open(registry, registry.resource, None, request)
    bookmarks: list[int] = []
    items = aiter(stream.items())

    async def collect() -> None:
        while len(bookmarks) < 3:
            item = await anext(items)
            assert item.type == "BOOKMARK"  # nothing matches the selector
            bookmarks.append(item.revision)

    collector = asyncio.ensure_future(collect())
    written = 0
    try:
        async with asyncio.timeout(HANG):
            while not collector.done():
                await registry.create(None, body(f"other{written}", "unwanted"), OPTS)
                written += 1
        await collector
    finally:
        await items.aclose()  # type: ignore[attr-defined]
    assert bookmarks == sorted(set(bookmarks))  # strictly increasing
    assert bookmarks[-1] <= registry.store.revision


async def test_a_client_that_went_away_has_its_watch_closed_when_the_response_ends(
    registry: Registry,
) -> None:
    """The store's subscription is gone as soon as the response has ended, not whenever the
    response's generators are collected."""
    store = registry.store
    assert isinstance(store, SQLiteStore)
    app = build_app(APIServer(store, [registry], ServerSettings()), None)
    path = f"/apis/{GROUP}/v1alpha3/resourceslicepatches"
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": f"watch=1&resourceVersion={store.revision}".encode(),
        "headers": [(b"host", b"test")],
        "client": ("127.0.0.1", 1),
        "server": ("test", 443),
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            raise OSError("the client went away")  # as the server says so on a send

    served = asyncio.ensure_future(app(scope, receive, send))

    await eventually(lambda: len(store._fanout) > 0, "the watch to subscribe", timeout=HANG)
    await registry.create(None, body("p", "a"), OPTS)  # the event whose send fails
    with contextlib.suppress(Exception):
        await asyncio.wait_for(served, HANG)
    assert len(store._fanout) == 0

"""Requests are deleted when their time to live is over: completed ones after the request's
own ttlSecondsAfterComplete or the default, never-completed ones a day after creation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from apiserver.controllers import RequestCleaner, deadline
from apiserver.kinds.resourcepoolstatusrequest import ResourcePoolStatusRequestStrategy
from apiserver.machinery import (
    DeleteOptions,
    ListOptions,
    Registry,
    StatusSubresource,
    WriteOptions,
)
from apiserver.sources import MemorySource, StoreSource
from apiserver.storage.sqlite import SQLiteStore
from apiserver.toolkit import MERGE_PATCH
from devtools.waiting import eventually

GROUP = "resource.k8s.io"
T0 = datetime(2026, 2, 7, 10, 30, tzinfo=UTC)


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def request(
    created: datetime, completed: datetime | None = None, ttl: int | None = None
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "r", "creationTimestamp": stamp(created)},
        "spec": {"driver": "gpu.example.com"},
    }
    if ttl is not None:
        obj["spec"]["ttlSecondsAfterComplete"] = ttl
    if completed is not None:
        obj["status"] = {"observationTime": stamp(completed)}
    return obj


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (request(T0), T0 + timedelta(hours=24)),
        (request(T0, T0 + timedelta(seconds=5)), T0 + timedelta(seconds=5, hours=1)),
        (request(T0, T0 + timedelta(seconds=5), ttl=0), T0 + timedelta(seconds=5)),
        (request(T0, T0 + timedelta(seconds=5), ttl=90), T0 + timedelta(seconds=95)),
        (request(T0, ttl=0), T0 + timedelta(hours=24)),  # its TTL starts at completion
        ({"metadata": {"name": "r"}, "spec": {}}, None),
    ],
)
def test_deadlines(obj: dict[str, Any], expected: datetime | None) -> None:
    assert deadline(obj, 3600, 24 * 3600) == expected


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Setup:
    registry: Registry
    source: StoreSource
    cleaner: RequestCleaner
    clock: Clock

    async def make(self, name: str, **spec: Any) -> dict[str, Any]:
        body = {
            "apiVersion": f"{GROUP}/v1alpha1",
            "kind": "ResourcePoolStatusRequest",
            "metadata": {"name": name},
            "spec": {"driver": "gpu.example.com", **spec},
        }
        created = (await self.registry.create(None, body, WriteOptions())).obj.obj
        await self.cached(name, created["metadata"]["resourceVersion"])
        return created

    async def complete(self, name: str, when: datetime) -> None:
        patch = {"status": {"observationTime": stamp(when)}}
        done = await StatusSubresource(self.registry).patch(
            None, name, orjson.dumps(patch), MERGE_PATCH, WriteOptions()
        )
        await self.cached(name, done.obj.obj["metadata"]["resourceVersion"])

    async def cached(self, name: str, rv: str) -> None:
        async def seen() -> bool:
            return (self.source.get(name) or {}).get("metadata", {}).get("resourceVersion") == rv

        await eventually(seen)

    async def names(self) -> list[str]:
        listed = await self.registry.list(None, ListOptions())
        return sorted(i.obj["metadata"]["name"] for i in listed.items)


@pytest.fixture
async def setup(store: SQLiteStore) -> AsyncIterator[Setup]:
    strategy = ResourcePoolStatusRequestStrategy.for_group(GROUP)
    source = StoreSource(store, strategy.resource.key_prefix(), name="requests")
    registry = Registry(strategy, store)
    clock = Clock(datetime.now(UTC))
    cleaner = RequestCleaner(source, registry, ttl=3600, pending_ttl=24 * 3600, now=clock)
    await source.start()
    await source.wait_synced()
    yield Setup(registry, source, cleaner, clock)
    await source.close()


async def test_completed_requests_go_after_their_ttl(setup: Setup) -> None:
    start = setup.clock.now
    await setup.make("default-ttl")
    await setup.make("own-ttl", ttlSecondsAfterComplete=60)
    await setup.make("at-once", ttlSecondsAfterComplete=0)
    for name in ("default-ttl", "own-ttl", "at-once"):
        await setup.complete(name, start)
    deleted, wait = await setup.cleaner.sweep()
    assert deleted == ["at-once"]
    assert 59 <= wait <= 60  # own-ttl is next, a minute after completion
    setup.clock.now = start + timedelta(seconds=61)
    deleted, _ = await setup.cleaner.sweep()
    assert deleted == ["own-ttl"]
    setup.clock.now = start + timedelta(seconds=3601)
    deleted, _ = await setup.cleaner.sweep()
    assert deleted == ["default-ttl"]
    assert await setup.names() == []


async def test_requests_never_completed_go_after_a_day(setup: Setup) -> None:
    start = setup.clock.now
    await setup.make("stuck", ttlSecondsAfterComplete=0)
    setup.clock.now = start + timedelta(hours=23)
    assert (await setup.cleaner.sweep())[0] == []
    setup.clock.now = start + timedelta(hours=24, seconds=2)
    assert (await setup.cleaner.sweep())[0] == ["stuck"]
    assert await setup.names() == []


async def test_a_request_recreated_under_the_same_name_is_kept(setup: Setup) -> None:
    """The deletion carries the uid the cleaner saw: a new request of that name survives."""
    start = setup.clock.now
    old = await setup.make("again", ttlSecondsAfterComplete=0)
    await setup.complete("again", start)
    stale = setup.source.get("again")
    assert stale is not None
    await setup.registry.delete(None, "again", DeleteOptions())
    await setup.make("again")
    # A cleaner whose cache still holds the old object tries; the uid stops it.
    behind = MemorySource("requests", [stale])
    await behind.start()
    cleaner = RequestCleaner(behind, setup.registry, now=setup.clock)
    assert (await cleaner.sweep())[0] == []
    assert await setup.names() == ["again"]
    assert (await setup.registry.get(None, "again")).obj["metadata"]["uid"] != old["metadata"][
        "uid"
    ]


async def test_the_running_cleaner_deletes_a_request_completed_with_ttl_zero(setup: Setup) -> None:
    await setup.cleaner.start()
    try:
        await setup.make("short-lived", ttlSecondsAfterComplete=0)
        await setup.make("kept")
        await setup.complete("short-lived", setup.clock.now)

        async def gone() -> bool:
            return "short-lived" not in await setup.names()

        await eventually(gone)
        assert await setup.names() == ["kept"]
        assert setup.cleaner.deleted == 1
    finally:
        await setup.cleaner.close()

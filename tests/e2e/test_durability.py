"""Acknowledged writes survive kill -9 and restarts; watches resume from history on disk.

Each test drives a server of its own with many concurrent writes, keeps a record of
every write the server acknowledged (its answer and resourceVersion), stops the process
(SIGKILL right after the last acknowledgement, or SIGTERM), starts it again on the same
data and certificates, and compares what is stored with that record.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from .harness import ServerProcess

RSP = "/apis/resource.k8s.io/v1alpha3/resourceslicepatches"
RPSR = "/apis/resource.k8s.io/v1alpha1/resourcepoolstatusrequests"
MERGE = {"Content-Type": "application/merge-patch+json"}
CONCURRENCY = 48


def rsp(name: str, priority: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourceSlicePatch",
        "metadata": {"name": name, "labels": {"batch": "durability"}},
        "spec": {
            "devices": {
                "priority": priority,
                "filter": {"driver": "gpu.example.com"},
                "attributes": {"gpu.example.com/tier": {"string": f"t{priority}"}},
            }
        },
    }


def rpsr(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1alpha1",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": {"driver": "gpu.example.com", "limit": 10},
    }


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


@dataclass
class Ledger:
    """Every write the server acknowledged: the latest answer per object URL, and deletes."""

    live: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    rvs: list[int] = field(default_factory=list)

    def record(self, url: str, obj: dict[str, Any]) -> None:
        self.live[url] = obj
        self.rvs.append(rv(obj))

    def forget(self, url: str) -> None:
        del self.live[url]
        self.deleted.add(url)


async def gather_limited(jobs: list[Callable[[], Awaitable[None]]]) -> None:
    """Run ``jobs`` concurrently, at most CONCURRENCY at a time."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def run(job: Callable[[], Awaitable[None]]) -> None:
        async with gate:
            await job()

    await asyncio.gather(*(run(job) for job in jobs))


def acked(resp: httpx.Response, *codes: int) -> dict[str, Any]:
    assert resp.status_code in codes, resp.text
    body: dict[str, Any] = resp.json()
    return body


class Writer:
    """Concurrent writes against one server, each recorded in the ledger once acknowledged."""

    def __init__(self, client: httpx.AsyncClient, ledger: Ledger) -> None:
        self.client = client
        self.ledger = ledger

    def create(self, path: str, obj: dict[str, Any]) -> Callable[[], Awaitable[None]]:
        async def job() -> None:
            body = acked(await self.client.post(path, json=obj), 201)
            self.ledger.record(f"{path}/{body['metadata']['name']}", body)

        return job

    def update(self, url: str, priority: int) -> Callable[[], Awaitable[None]]:
        async def job() -> None:
            current = self.ledger.live[url]
            new = orjson.loads(orjson.dumps(current))
            new["spec"]["devices"]["priority"] = priority
            self.ledger.record(url, acked(await self.client.put(url, json=new), 200))

        return job

    def label(self, url: str, value: str) -> Callable[[], Awaitable[None]]:
        async def job() -> None:
            patch = orjson.dumps({"metadata": {"labels": {"step": value}}})
            resp = await self.client.patch(url, content=patch, headers=MERGE)
            self.ledger.record(url, acked(resp, 200))

        return job

    def status(self, url: str, matched: int) -> Callable[[], Awaitable[None]]:
        async def job() -> None:
            patch = orjson.dumps({"status": {"matchedDevices": matched}})
            resp = await self.client.patch(f"{url}/status", content=patch, headers=MERGE)
            self.ledger.record(url, acked(resp, 200))

        return job

    def delete(self, url: str) -> Callable[[], Awaitable[None]]:
        async def job() -> None:
            body = acked(await self.client.delete(url), 200)
            if "/resourcepoolstatusrequests/" in url:
                # Its registry returns the deleted object, as its generated clients expect.
                assert body["kind"] == "ResourcePoolStatusRequest"
                assert body["metadata"]["name"] == url.rsplit("/", 1)[1]
            else:
                assert body["kind"] == "Status"
                assert body["status"] == "Success"
            self.ledger.forget(url)

        return job


async def busy_workload(client: httpx.AsyncClient, ledger: Ledger, prefix: str) -> None:
    """200 creates of both kinds, then creates, updates, patches and deletes all at once."""
    writer = Writer(client, ledger)
    first = [writer.create(RSP, rsp(f"{prefix}-p{i}", i)) for i in range(150)]
    first += [writer.create(RPSR, rpsr(f"{prefix}-r{i}")) for i in range(30)]
    await gather_limited(first)

    urls = [f"{RSP}/{prefix}-p{i}" for i in range(150)]
    mixed = [writer.create(RSP, rsp(f"{prefix}-p{i}", i)) for i in range(150, 170)]
    mixed += [writer.update(url, 1000 + i) for i, url in enumerate(urls[:60])]
    mixed += [writer.label(url, f"s{i}") for i, url in enumerate(urls[60:90])]
    mixed += [writer.status(url, i) for i, url in enumerate(urls[90:110])]
    mixed += [writer.delete(url) for url in urls[110:150]]
    mixed += [writer.delete(f"{RPSR}/{prefix}-r{i}") for i in range(10)]
    await gather_limited(mixed)


async def stored_state(client: httpx.AsyncClient) -> tuple[int, dict[str, dict[str, Any]]]:
    """The highest list resourceVersion and every stored object by URL, for both kinds."""
    objects: dict[str, dict[str, Any]] = {}
    revision = 0
    for path in (RSP, RPSR):
        body = acked(await client.get(path), 200)
        revision = max(revision, int(body["metadata"]["resourceVersion"]))
        for item in body["items"]:
            objects[f"{path}/{item['metadata']['name']}"] = item
    return revision, objects


async def assert_matches_ledger(server: ServerProcess, ledger: Ledger) -> None:
    """Exactly the acknowledged objects are stored, as acknowledged; deleted ones are gone."""
    async with server.async_client() as client:
        revision, objects = await stored_state(client)
        assert set(objects) == set(ledger.live)
        for url, obj in ledger.live.items():
            assert objects[url] == obj, url
            assert acked(await client.get(url), 200) == obj
        for url in ledger.deleted:
            resp = await client.get(url)
            assert resp.status_code == 404, resp.text
            assert resp.json()["reason"] == "NotFound"
        assert revision >= max(ledger.rvs)

        created = acked(await client.post(RSP, json=rsp("after-restart", 1)), 201)
        assert rv(created) > max(ledger.rvs)
        assert rv(created) > revision


async def test_kill9_keeps_every_acknowledged_write(fresh_server: ServerProcess) -> None:
    """After kill -9 right after the last acknowledgement, every acknowledged write is there."""
    ledger = Ledger()
    async with fresh_server.async_client() as client:
        await busy_workload(client, ledger, "k9")
    fresh_server.kill9()
    assert len(ledger.live) == 170 - 40 + 30 - 10
    assert len(ledger.rvs) == len(set(ledger.rvs)), "resourceVersions must be unique"

    fresh_server.start()

    await assert_matches_ledger(fresh_server, ledger)


async def test_kill9_twice_in_a_row(fresh_server: ServerProcess) -> None:
    """Writes acknowledged between two kills survive both, and resourceVersions keep rising."""
    ledger = Ledger()
    async with fresh_server.async_client() as client:
        writer = Writer(client, ledger)
        await gather_limited([writer.create(RSP, rsp(f"one-{i}", i)) for i in range(40)])
    fresh_server.kill9()
    fresh_server.start()
    before = max(ledger.rvs)
    async with fresh_server.async_client() as client:
        writer = Writer(client, ledger)
        jobs = [writer.update(f"{RSP}/one-{i}", 500 + i) for i in range(20)]
        jobs += [writer.create(RSP, rsp(f"two-{i}", i)) for i in range(20)]
        jobs += [writer.delete(f"{RSP}/one-{i}") for i in range(20, 30)]
        await gather_limited(jobs)
    assert min(rv(ledger.live[f"{RSP}/two-{i}"]) for i in range(20)) > before
    fresh_server.kill9()

    fresh_server.start()

    await assert_matches_ledger(fresh_server, ledger)


async def test_clean_restart_keeps_every_acknowledged_write(fresh_server: ServerProcess) -> None:
    """After SIGTERM and a start on the same data, every acknowledged write is there."""
    ledger = Ledger()
    async with fresh_server.async_client() as client:
        await busy_workload(client, ledger, "term")
    fresh_server.stop()

    fresh_server.start()

    await assert_matches_ledger(fresh_server, ledger)


async def watch_rsp(
    client: httpx.AsyncClient, resource_version: int, until: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    """Watch events (bookmarks left out) from ``resource_version`` until ``until`` holds."""
    events: list[dict[str, Any]] = []
    params = {
        "watch": "true",
        "resourceVersion": str(resource_version),
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "30",
    }
    async with client.stream("GET", RSP, params=params) as resp:
        assert resp.status_code == 200
        async for line in resp.aiter_lines():
            if not line.strip():
                continue
            event = orjson.loads(line)
            if event["type"] == "BOOKMARK":
                continue
            events.append(event)
            if until(events):
                break
    return events


async def test_watch_resumes_across_a_clean_restart(fresh_server: ServerProcess) -> None:
    """A watch from resourceVersions seen before a restart gets the history and new events."""
    ledger = Ledger()
    async with fresh_server.async_client() as client:
        writer = Writer(client, ledger)
        await gather_limited([writer.create(RSP, rsp(f"w-{i}", i)) for i in range(30)])
        mid, _ = await stored_state(client)
        await gather_limited([writer.update(f"{RSP}/w-{i}", 100 + i) for i in range(10)])
        await gather_limited([writer.delete(f"{RSP}/w-{i}") for i in range(20, 25)])
        last, _ = await stored_state(client)
    updates = {f"w-{i}": rv(ledger.live[f"{RSP}/w-{i}"]) for i in range(10)}
    deleted = {f"w-{i}" for i in range(20, 25)}
    fresh_server.stop()

    fresh_server.start()

    async with fresh_server.async_client() as client:

        def has_new(events: list[dict[str, Any]]) -> bool:
            return any(e["object"]["metadata"]["name"] == "new" for e in events)

        from_mid = asyncio.create_task(watch_rsp(client, mid, has_new))
        from_last = asyncio.create_task(watch_rsp(client, last, has_new))
        created = acked(await client.post(RSP, json=rsp("new", 7)), 201)
        history, fresh = await asyncio.wait_for(asyncio.gather(from_mid, from_last), 60)

    revisions = [rv(e["object"]) for e in history]
    assert revisions == sorted(revisions)
    assert len(set(revisions)) == len(revisions)
    assert all(r > mid for r in revisions)
    modified = {
        e["object"]["metadata"]["name"]: rv(e["object"]) for e in history if e["type"] == "MODIFIED"
    }
    assert modified == updates
    assert {e["object"]["metadata"]["name"] for e in history if e["type"] == "DELETED"} == deleted
    assert [e["type"] for e in history[-1:]] == ["ADDED"]
    assert history[-1]["object"] == created
    assert len(history) == len(updates) + len(deleted) + 1

    assert [(e["type"], e["object"]) for e in fresh] == [("ADDED", created)]
    assert rv(created) > last

"""Server processes on a real etcd: replicas share it, an etcd outage is a 503, nothing
acknowledged is lost, and one replica dying does not stop the other.

Replica tests share the session etcd (fsync off), each under an etcd key prefix of its
own. Outage tests run their own etcd with the default, durable settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from devtools.localetcd import LocalEtcd
from devtools.waiting import eventually

from .harness import ServerProcess, start_server

RSP = "/apis/resource.k8s.io/v1alpha3/resourceslicepatches"
HANG = 60.0
_prefixes = itertools.count()


def rsp(name: str, priority: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourceSlicePatch",
        "metadata": {"name": name},
        "spec": {"devices": {"priority": priority, "filter": {"driver": "gpu.example.com"}}},
    }


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def same_write(stored: dict[str, Any], acked: dict[str, Any]) -> bool:
    """``stored`` is the acknowledged object, or a later version of it (the server's own
    status writers may have updated it since)."""
    return (
        stored["metadata"]["uid"] == acked["metadata"]["uid"]
        and stored["spec"] == acked["spec"]
        and rv(stored) >= rv(acked)
    )


def replica(workdir: Path, etcd: LocalEtcd, prefix: str, *extra: str) -> ServerProcess:
    return start_server(
        workdir,
        ["--etcd-prefix", prefix, "--bookmark-interval", "1", *extra],
        storage=etcd.url,
    )


@pytest.fixture
def replicas(tmp_path: Path, etcd: LocalEtcd) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    prefix = f"/e2e-{next(_prefixes)}"
    a = replica(tmp_path / "a", etcd, prefix)
    b = replica(tmp_path / "b", etcd, prefix)
    yield a, b
    a.stop()
    b.stop()


@pytest.fixture
def durable_etcd(tmp_path: Path) -> Iterator[LocalEtcd]:
    """An etcd of this test's own with the default settings (fsync on)."""
    server = LocalEtcd(tmp_path / "etcd" / "data").start()
    yield server
    server.stop()


class Watcher:
    """A watch over HTTP, collecting events in the background until it ends or is stopped."""

    def __init__(self, client: httpx.AsyncClient, resource_version: int) -> None:
        self.events: list[dict[str, Any]] = []
        self.ended = asyncio.Event()
        self._new = asyncio.Event()
        self._task = asyncio.create_task(self._run(client, resource_version))

    async def _run(self, client: httpx.AsyncClient, resource_version: int) -> None:
        params = {
            "watch": "true",
            "resourceVersion": str(resource_version),
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "120",
        }
        try:
            async with client.stream("GET", RSP, params=params, timeout=None) as resp:
                assert resp.status_code == 200, await resp.aread()
                async for line in resp.aiter_lines():
                    if line.strip():
                        event = orjson.loads(line)
                        if event["type"] != "BOOKMARK":
                            self.events.append(event)
                            self._new.set()
        finally:
            self.ended.set()
            self._new.set()

    def names(self, event_type: str) -> list[str]:
        return [e["object"]["metadata"]["name"] for e in self.events if e["type"] == event_type]

    async def until(self, predicate: Any) -> None:
        async def wait() -> None:
            while not predicate(self):
                self._new.clear()
                if self.ended.is_set():
                    return
                await self._new.wait()

        await asyncio.wait_for(wait(), HANG)

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task


@contextlib.asynccontextmanager
async def clients(*servers: ServerProcess) -> AsyncIterator[list[httpx.AsyncClient]]:
    async with contextlib.AsyncExitStack() as stack:
        yield [await stack.enter_async_context(s.async_client()) for s in servers]


def created(resp: httpx.Response) -> dict[str, Any]:
    assert resp.status_code == 201, resp.text
    body: dict[str, Any] = resp.json()
    return body


async def test_two_replicas_see_each_others_writes_and_watch_events(
    replicas: tuple[ServerProcess, ServerProcess],
) -> None:
    a_server, b_server = replicas
    async with clients(a_server, b_server) as (a, b):
        start = rv((await b.get(RSP)).json())
        on_b = Watcher(b, start)  # sees every write after start, whenever it connects

        for i in range(10):
            obj = created(await a.post(RSP, json=rsp(f"from-a-{i}", i)))
            # A read on the other replica right after the acknowledgement sees the write.
            got = await b.get(f"{RSP}/from-a-{i}")
            assert got.status_code == 200, got.text
            assert same_write(got.json(), obj)
            listed = (await b.get(RSP)).json()
            assert f"from-a-{i}" in {o["metadata"]["name"] for o in listed["items"]}
            assert rv(listed) >= rv(obj)

        first = (await a.get(f"{RSP}/from-a-0")).json()
        on_a = Watcher(a, rv(first))
        # A resourceVersion handed out by A is good on B: no "too large resource version".
        on_b_from_a = Watcher(b, rv(first))
        first["spec"]["devices"]["priority"] = 100
        updated = await b.put(f"{RSP}/from-a-0", json=first)
        assert updated.status_code == 200, updated.text
        assert same_write((await a.get(f"{RSP}/from-a-0")).json(), updated.json())

        stale = await a.put(f"{RSP}/from-a-0", json=first)
        assert stale.status_code == 409, stale.text
        assert stale.json()["reason"] == "Conflict"

        def saw_update(w: Watcher) -> bool:
            return any(e["type"] == "MODIFIED" and e["object"] == updated.json() for e in w.events)

        for watcher in (on_b, on_a, on_b_from_a):
            await watcher.until(saw_update)
        assert on_b.names("ADDED") == [f"from-a-{i}" for i in range(10)]
        for watcher in (on_a, on_b_from_a):
            assert "from-a-0" not in watcher.names("ADDED")
        for watcher in (on_a, on_b, on_b_from_a):
            await watcher.stop()


async def test_replica_killed_mid_write_the_other_keeps_serving(
    replicas: tuple[ServerProcess, ServerProcess],
) -> None:
    a_server, b_server = replicas
    acknowledged: dict[str, dict[str, Any]] = {}
    async with clients(a_server, b_server) as (a, b):
        start = rv((await b.get(RSP)).json())
        on_b = Watcher(b, start)
        enough = asyncio.Event()

        async def write_to_a(worker: int) -> None:
            for i in itertools.count():
                name = f"a-{worker}-{i}"
                try:
                    resp = await a.post(RSP, json=rsp(name))
                except httpx.HTTPError:
                    return  # the replica died under this request: not acknowledged
                acknowledged[name] = created(resp)
                if len(acknowledged) >= 60:
                    enough.set()

        writers = [asyncio.create_task(write_to_a(w)) for w in range(8)]
        await asyncio.wait_for(enough.wait(), HANG)
        a_server.kill9()
        await asyncio.wait_for(asyncio.gather(*writers), HANG)

        # The other replica serves every acknowledged write, and new ones.
        listed = (await b.get(RSP)).json()
        names = {o["metadata"]["name"] for o in listed["items"]}
        assert set(acknowledged) <= names
        for name in list(acknowledged)[:10]:
            got = await b.get(f"{RSP}/{name}")
            assert got.status_code == 200
            assert same_write(got.json(), acknowledged[name])
        after = created(await b.post(RSP, json=rsp("after-kill")))
        await on_b.until(lambda w: "after-kill" in w.names("ADDED"))
        assert set(acknowledged) <= set(on_b.names("ADDED"))
        assert rv(after) > max(rv(o) for o in acknowledged.values())
        await on_b.stop()


async def test_etcd_outage_is_503_then_service_resumes_and_keeps_acknowledged_writes(
    tmp_path: Path, durable_etcd: LocalEtcd
) -> None:
    server = replica(tmp_path / "server", durable_etcd, "/registry", "--etcd-request-timeout", "2")
    acknowledged: dict[str, dict[str, Any]] = {}
    failures: list[httpx.Response] = []
    try:
        async with server.async_client() as client:
            for i in range(20):
                acknowledged[f"before-{i}"] = created(
                    await client.post(RSP, json=rsp(f"before-{i}"))
                )
            start = rv((await client.get(RSP)).json())
            watcher = Watcher(client, start)
            busy = asyncio.Event()

            async def writer(worker: int) -> None:
                for i in range(200):
                    name = f"during-{worker}-{i}"
                    resp = await client.post(RSP, json=rsp(name))
                    if resp.status_code == 201:
                        acknowledged[name] = resp.json()
                        if len(acknowledged) >= 60:
                            busy.set()
                    else:
                        failures.append(resp)
                        return

            writers = [asyncio.create_task(writer(w)) for w in range(6)]
            await asyncio.wait_for(busy.wait(), HANG)
            durable_etcd.kill()  # kill -9 in the middle of the writes
            await asyncio.wait_for(asyncio.gather(*writers), HANG)

            # During the outage: a Status 503 for reads and writes, never a hang.
            for call in (
                client.get(RSP),
                client.get(f"{RSP}/before-0"),
                client.post(RSP, json=rsp("refused")),
            ):
                resp = await call
                failures.append(resp)
            for resp in failures:
                assert resp.status_code == 503, resp.text
                body = resp.json()
                assert (body["kind"], body["reason"], body["code"]) == (
                    "Status",
                    "ServiceUnavailable",
                    503,
                )
            assert (await client.get("/readyz")).status_code == 503

            durable_etcd.start()

            async def serving() -> bool:
                # Polls the server: nothing in this process can signal etcd being back.
                return (await client.get(RSP)).status_code == 200

            await eventually(serving, "the server to serve again", timeout=HANG)
            after = created(await client.post(RSP, json=rsp("after")))

            listed = (await client.get(RSP)).json()
            stored = {o["metadata"]["name"]: o for o in listed["items"]}
            for name, obj in acknowledged.items():
                assert same_write(stored[name], obj), name
            assert "refused" not in stored

            # The watch resumed (every acknowledged create, then the new one, in order),
            # or ended with 410 Gone so that a client relists.
            await watcher.until(lambda w: "after" in w.names("ADDED") or w.ended.is_set())
            if "after" in watcher.names("ADDED"):
                revisions = [rv(e["object"]) for e in watcher.events]
                assert revisions == sorted(revisions)
                assert {n for n in acknowledged if n.startswith("during")} <= set(
                    watcher.names("ADDED")
                )
                last_added = [e for e in watcher.events if e["type"] == "ADDED"][-1]
                assert last_added["object"] == after
            else:
                assert watcher.events[-1]["type"] == "ERROR"
                assert watcher.events[-1]["object"]["code"] == 410
            await watcher.stop()
            ready = await client.get("/readyz")
            assert ready.status_code == 200, ready.text
    finally:
        server.stop()

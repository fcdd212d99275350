"""Two replicas on one etcd, both running the ResourcePoolStatusRequest controller: every
request is answered exactly once (one status write, counted by one replica), because the
status write carries the resourceVersion it read and the loser of a race sees the answer."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from devtools.localetcd import LocalEtcd
from devtools.waiting import eventually

from .harness import ServerProcess, start_server
from .objects import RPSR_PATH, node_slice, rpsr

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
DEVICES = "/apis/resource.k8s.io/v1alpha3/devices"
DRIVER = "gpu.example.com"
HANG = 60.0
REQUESTS = 24
_prefixes = itertools.count()


def slice_obj(node: str) -> dict[str, Any]:
    return node_slice(f"{node}-gpu", DRIVER, node, [{"name": f"gpu-{i}"} for i in range(4)])


@pytest.fixture
def replicas(tmp_path: Path, etcd: LocalEtcd) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    prefix = f"/pool-status-{next(_prefixes)}"
    args = ["--etcd-prefix", prefix, "--bookmark-interval", "1", "--pool-status"]
    a = start_server(tmp_path / "a", args, storage=etcd.url)
    b = start_server(tmp_path / "b", args, storage=etcd.url)
    yield a, b
    a.stop()
    b.stop()


async def status_writes(
    client: httpx.AsyncClient, since: str, seen: dict[str, list[dict[str, Any]]], marker: str
) -> None:
    """Follow the requests from ``since``; record each distinct status per name, until the
    marker label shows up."""
    params = {"watch": "true", "resourceVersion": since, "timeoutSeconds": str(int(HANG))}
    async with client.stream("GET", RPSR_PATH, params=params, timeout=None) as resp:
        assert resp.status_code == 200
        async for line in resp.aiter_lines():
            if not line.strip():
                continue
            event = orjson.loads(line)
            obj = event["object"]
            name = obj["metadata"]["name"]
            status = obj.get("status")
            history = seen.setdefault(name, [])
            if status and (not history or history[-1] != status):
                history.append(status)
            if (obj["metadata"].get("labels") or {}).get("marker") == marker:
                return


def processed(metrics: str) -> float:
    for line in metrics.splitlines():
        if line.startswith("resourcepoolstatus_requests_processed_total "):
            return float(line.split()[1])
    raise AssertionError("no resourcepoolstatus_requests_processed_total on /metrics")


async def test_each_request_is_answered_once_by_two_replicas(
    replicas: tuple[ServerProcess, ServerProcess],
) -> None:
    a_server, b_server = replicas
    async with contextlib.AsyncExitStack() as stack:
        a = await stack.enter_async_context(a_server.async_client())
        b = await stack.enter_async_context(b_server.async_client())
        for node in ("node-1", "node-2", "node-3"):
            assert (await a.post(SLICES, json=slice_obj(node))).status_code == 201

        async def both_views_have_them() -> bool:
            counts = [len((await c.get(DEVICES)).json()["items"]) for c in (a, b)]
            return counts == [12, 12]

        await eventually(both_views_have_them, timeout=HANG)
        since = (await a.get(RPSR_PATH)).json()["metadata"]["resourceVersion"]
        seen: dict[str, list[dict[str, Any]]] = {}
        watching = asyncio.create_task(status_writes(a, since, seen, "done"))  # from since on

        names = [f"twice-{i}" for i in range(REQUESTS)]
        replies = await asyncio.gather(
            *(
                (a if i % 2 else b).post(RPSR_PATH, json=rpsr(n, DRIVER))
                for i, n in enumerate(names)
            )
        )
        assert [r.status_code for r in replies] == [201] * REQUESTS

        async def all_answered() -> bool:
            listed = (await a.get(RPSR_PATH)).json()["items"]
            done = {
                o["metadata"]["name"]
                for o in listed
                if (o.get("status") or {}).get("observationTime")
            }
            return set(names) <= done

        await eventually(all_answered, timeout=HANG)
        marked = await b.patch(
            f"{RPSR_PATH}/{names[0]}",
            content=b'{"metadata":{"labels":{"marker":"done"}}}',
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert marked.status_code == 200
        await asyncio.wait_for(watching, HANG)

        assert {n: len(seen.get(n, [])) for n in names} == dict.fromkeys(names, 1)
        for name in names:
            [status] = seen[name]
            assert [p["poolName"] for p in status["pools"]] == ["node-1", "node-2", "node-3"]
            assert {p["totalDevices"] for p in status["pools"]} == {4}
            assert status["conditions"][0]["reason"] == "CalculationComplete"
        totals = [processed((await c.get("/metrics")).text) for c in (a, b)]
        assert sum(totals) == REQUESTS

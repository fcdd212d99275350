"""Reserving AllocationReviews that race for devices, over HTTPS against real server
processes: N reviews at once, one device each, over M free devices hold exactly min(N, M)
devices, each once, and every other review is answered with no feasible node (never
``feasible`` without a ``reservation``). On one server, and on two servers sharing one real
etcd, several rounds each. A user at the cap on held reservations gets 429 and holds
nothing more."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from devtools.localetcd import LocalEtcd

from .harness import ServerProcess, start_server
from .objects import node_pool_docs

GROUP = "resource.k8s.io"
REVIEWS = f"/apis/{GROUP}/v1alpha3/allocationreviews"
RESERVATIONS = f"/apis/{GROUP}/v1alpha3/devicereservations"
SLICES = f"/apis/{GROUP}/v1/resourceslices"
DRIVER = "race.example.com"
UNAVAILABLE_RETRIES = 5
"""A review the server answers 503 (its caches not yet at the store's revision, which on an
etcd without ordered progress notifications can take a while) is asked again, as any
client would; nothing of it was held."""
_prefixes = itertools.count()
_rounds = itertools.count()


def setup_docs(node: str, pool: str, devices: int) -> list[dict[str, Any]]:
    """A class for the driver, a node and a pool of ``devices`` on it."""
    return node_pool_docs(DRIVER, node, pool, devices)


def reserving_review(node: str) -> dict[str, Any]:
    request = {"name": "one", "exactly": {"deviceClassName": DRIVER}}
    return {
        "apiVersion": f"{GROUP}/v1alpha3",
        "kind": "AllocationReview",
        "spec": {
            "claims": [{"name": "one", "spec": {"devices": {"requests": [request]}}}],
            "nodeNames": [node],
            "reserve": True,
            "reservationSeconds": 300,
        },
    }


def held_device(status: dict[str, Any]) -> str | None:
    """The device a reserving review holds, or None after checking it holds nothing and
    answers no feasible node."""
    if "reservation" not in status:
        assert not any(n["feasible"] for n in status["nodes"]), status
        return None
    [entry] = status["nodes"]
    assert entry["feasible"] is True
    [result] = entry["allocations"][0]["devices"]["results"]
    assert result["driver"] == DRIVER
    device: str = result["device"]
    return device


async def race(clients: list[httpx.AsyncClient], node: str, reviews: int) -> list[str]:
    """``reviews`` reserving reviews at once, spread over the clients: the devices held."""
    body = reserving_review(node)

    async def ask(i: int) -> str | None:
        for _ in range(UNAVAILABLE_RETRIES):
            answer = await clients[i % len(clients)].post(REVIEWS, json=body)
            if answer.status_code != 503:  # caches behind the store: asked to retry
                break
        assert answer.status_code == 201, answer.text
        return held_device(answer.json()["status"])

    answers = await asyncio.gather(*(ask(i) for i in range(reviews)))
    return [a for a in answers if a is not None]


async def stored_devices(client: httpx.AsyncClient, pool: str) -> list[str]:
    listed = (await client.get(RESERVATIONS)).json()["items"]
    return [d["device"] for r in listed for d in r["spec"]["devices"] if d["pool"] == pool]


async def one_round(
    servers: list[ServerProcess], reviews: int, devices: int, *, rounds: int = 1
) -> None:
    """``rounds`` times: a fresh pool of ``devices``; ``reviews`` reviews race for it."""
    for _ in range(rounds):
        n = next(_rounds)
        node, pool = f"race-node-{n}", f"race-pool-{n}"
        servers[0].kubectl(
            "apply", "-f", "-", input=yaml.safe_dump_all(setup_docs(node, pool, devices))
        )
        # New connections each round, as a fresh client would have: the rounds race on
        # reviews, not on connections left idle through the kubectl runs between rounds.
        async with contextlib.AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(s.async_client(timeout=120)) for s in servers
            ]
            held = await race(clients, node, reviews)
            assert len(held) == min(reviews, devices), (len(held), reviews, devices)
            assert len(set(held)) == len(held), sorted(held)
            for client in clients:
                assert sorted(await stored_devices(client, pool)) == sorted(held)
            servers[0].kubectl("delete", "devicereservations", "--all")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = start_server(tmp_path_factory.mktemp("race"), [])
    yield proc
    proc.stop()


@pytest.mark.parametrize(("reviews", "devices"), [(24, 24), (50, 10), (40, 40), (30, 50)])
async def test_concurrent_reviews_on_one_server_hold_min_n_m(
    server: ServerProcess, reviews: int, devices: int
) -> None:
    await one_round([server], reviews, devices, rounds=3)


@pytest.fixture(scope="module")
def replicas(
    tmp_path_factory: pytest.TempPathFactory, etcd: LocalEtcd
) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    workdir: Path = tmp_path_factory.mktemp("race-replicas")
    args = ["--etcd-prefix", f"/race-{next(_prefixes)}", "--bookmark-interval", "1"]
    a = start_server(workdir / "a", args, storage=etcd.url)
    b = start_server(workdir / "b", args, storage=etcd.url)
    yield a, b
    a.stop()
    b.stop()


async def test_fifty_reviews_for_ten_devices_through_two_servers_on_one_etcd(
    replicas: tuple[ServerProcess, ServerProcess],
) -> None:
    await one_round(list(replicas), 50, 10, rounds=5)


async def test_twenty_four_reviews_for_twenty_four_devices_through_two_servers(
    replicas: tuple[ServerProcess, ServerProcess],
) -> None:
    await one_round(list(replicas), 24, 24, rounds=3)

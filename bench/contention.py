"""Reservation contention through real server processes: N reserving AllocationReviews at
once, one device each, over a fresh pool of M devices on one node, posted over HTTPS.

Two set-ups: one server (SQLite), and two servers sharing one etcd (the reviews alternate
between them). Per (N, M) and set-up, ``ROUNDS`` rounds, each on a fresh pool: how many
devices were held (always min(N, M) when reservations hold) and the time until every review
was answered. Baseline from the same run, alternating with them: the same N reviews, not
reserving, over their own fresh pool of M devices.

Run through ``bench.reservations`` (the ``reservations`` section).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from devtools.apiserver import serve_command
from devtools.localetcd import LocalEtcd

from . import report
from .targets import APIServerTarget

GROUP = "resource.k8s.io"
REVIEWS = f"/apis/{GROUP}/v1alpha3/allocationreviews"
RESERVATIONS = f"/apis/{GROUP}/v1alpha3/devicereservations"
DRIVER = "contention.bench.example.com"
CASES = ((24, 24), (50, 10), (50, 50))
ROUNDS = 3
_pools = itertools.count()


@dataclass
class _EtcdServer(APIServerTarget):
    storage: str = ""

    def command(self) -> list[str]:
        return serve_command(self.workdir, self.port, self.storage, extra=self.extra)


@dataclass
class Case:
    setup: str
    reviews: int
    devices: int
    held: list[int] = field(default_factory=list)
    reserving: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)


def _objects(node: str, pool: str, devices: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            f"/apis/{GROUP}/v1/deviceclasses",
            {
                "apiVersion": f"{GROUP}/v1",
                "kind": "DeviceClass",
                "metadata": {"name": DRIVER},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            },
        ),
        ("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}),
        (
            f"/apis/{GROUP}/v1/resourceslices",
            {
                "apiVersion": f"{GROUP}/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": pool},
                "spec": {
                    "driver": DRIVER,
                    "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                    "nodeName": node,
                    "devices": [{"name": f"dev-{i}"} for i in range(devices)],
                },
            },
        ),
    ]


async def _fresh_pool(client: httpx.AsyncClient, devices: int) -> str:
    """A new node with a pool of ``devices``; its name."""
    n = next(_pools)
    node = f"contention-node-{n}"
    for path, body in _objects(node, f"contention-pool-{n}", devices):
        answer = await client.post(path, json=body)
        if answer.status_code not in (201, 409):  # the class exists after the first pool
            raise RuntimeError(f"creating {path}: {answer.status_code} {answer.text}")
    return node


def _review(node: str, reserve: bool) -> dict[str, Any]:
    request = {"name": "one", "exactly": {"deviceClassName": DRIVER}}
    return {
        "apiVersion": f"{GROUP}/v1alpha3",
        "kind": "AllocationReview",
        "spec": {
            "claims": [{"name": "one", "spec": {"devices": {"requests": [request]}}}],
            "nodeNames": [node],
            "reserve": reserve,
            "reservationSeconds": 600,
        },
    }


async def _burst(
    clients: Sequence[httpx.AsyncClient], node: str, reviews: int, reserve: bool
) -> tuple[float, int]:
    """``reviews`` reviews at once: seconds until all are answered, devices held."""
    body = _review(node, reserve)

    async def ask(i: int) -> bool:
        answer = await clients[i % len(clients)].post(REVIEWS, json=body)
        if answer.status_code != 201:
            raise RuntimeError(f"review: {answer.status_code} {answer.text}")
        return "reservation" in answer.json()["status"]

    began = time.perf_counter()
    held = await asyncio.gather(*(ask(i) for i in range(reviews)))
    return time.perf_counter() - began, sum(held)


async def _release_all(client: httpx.AsyncClient) -> None:
    """Delete every reservation: they hold for 600 s, and the per-user cap must never bind."""
    listed = (await client.get(RESERVATIONS)).json()["items"]
    await asyncio.gather(
        *(client.delete(f"{RESERVATIONS}/{r['metadata']['name']}") for r in listed)
    )


async def _measure(setup: str, clients: Sequence[httpx.AsyncClient]) -> list[Case]:
    cases = []
    await _burst(clients, await _fresh_pool(clients[0], 10), 10, True)  # warm-up
    await _release_all(clients[0])
    for reviews, devices in CASES:
        case = Case(setup, reviews, devices)
        for _ in range(ROUNDS):
            seconds, held = await _burst(
                clients, await _fresh_pool(clients[0], devices), reviews, True
            )
            case.reserving.append(seconds)
            case.held.append(held)
            seconds, _ = await _burst(
                clients, await _fresh_pool(clients[0], devices), reviews, False
            )
            case.baseline.append(seconds)
            await _release_all(clients[0])
        cases.append(case)
    return cases


async def _run_with(targets: Sequence[APIServerTarget], setup: str) -> list[Case]:
    for target in targets:
        target.start()
    try:
        async with contextlib.AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(
                    httpx.AsyncClient(
                        base_url=t.url,
                        verify=t.ssl_context(),
                        headers=t.headers,
                        timeout=120.0,
                        limits=httpx.Limits(max_connections=64),
                    )
                )
                for t in targets
            ]
            return await _measure(setup, clients)
    finally:
        for target in targets:
            target.stop()


def run(log: Callable[[str], Any] = print) -> list[Case]:
    out: list[Case] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        log("contention: one server (SQLite)")
        one = APIServerTarget("server", root / "one", extra=["--no-pool-status"])
        (root / "one").mkdir()
        out += asyncio.run(_run_with([one], "one server, SQLite"))
        log("contention: two servers on one etcd")
        etcd = LocalEtcd(root / "etcd").start()
        try:
            args = ["--no-pool-status", "--etcd-prefix", "/contention"]
            pair = []
            for name in ("a", "b"):
                (root / name).mkdir()
                pair.append(_EtcdServer(name, root / name, extra=args, storage=etcd.url))
            out += asyncio.run(_run_with(pair, "two servers, one etcd"))
        finally:
            etcd.stop()
    return out


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def render(cases: list[Case]) -> str:
    lines = [
        "### Contention: N reserving reviews at once over M free devices, over HTTPS",
        "",
        "Real server processes: one on SQLite, or two sharing one etcd (one member, fsync"
        " on; the reviews alternate between the servers). Each round: a fresh pool of M"
        " devices on one node, then N AllocationReviews for one device each, posted at"
        f" once, reserving; {ROUNDS} rounds per row. Baseline from the same run, alternating"
        " with them: the same N reviews over their own fresh pool, not reserving. Held: the"
        " devices held in each round (min(N, M) when reservations hold). Time: until every"
        " review was answered, median of the rounds.",
        "",
        "| set-up | N reviews | M devices | held per round | reserving | baseline (not"
        " reserving) | reserving / baseline |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in cases:
        mine, base = statistics.median(c.reserving), statistics.median(c.baseline)
        lines.append(
            f"| {c.setup} | {c.reviews} | {c.devices} | {', '.join(map(str, c.held))}"
            f" | {_ms(mine)} | {_ms(base)} | {report.ratio(mine, base)} |"
        )
    lines += [
        "",
        "A reserving review searches and marks its pick under one lock per server and then"
        " writes its reservation (the reservation and a key per device in one transaction);"
        " a review that loses the write to the other server searches again without the"
        " device, and one that finds nothing while reserves are pending waits for them. The"
        " ratio is what the writes and those waits add to N plain reviews; with two servers"
        " every reservation is also a round trip to etcd. On the etcd the dev extras install"
        " (3.5.1, which cannot order progress notifications) the two-server rows need the"
        " review's catch-up through progress marks. The machine is shared, so single runs"
        " vary.",
    ]
    return "\n".join(lines)

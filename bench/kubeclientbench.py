"""The HTTP stack of the client layer: httpx (``apiserver.kubeclient``) against
kubernetes-asyncio's aiohttp ``ApiClient`` (how the sources read a kube-apiserver before),
over the real server, in the same run.

One ``python -m apiserver serve`` (SQLite) holds 10,000 ResourceSlices of one device each,
written after a recorded resourceVersion: 5,000 labelled ``set=a``, 5,000 ``set=b``. Each
round, alternating the stacks, (1) lists the 5,000 of ``set=a`` in pages of 500, and (2)
watches from the recorded resourceVersion until 10,000 events are decoded. The baseline
does what the kubernetes-asyncio source did: ``call_api`` with ``_preload_content=False``,
pages read whole, the watch's chunks split into lines by hand, each line decoded with
orjson. The client layer does the same through ``KubeClient.list`` and ``KubeClient.watch``.

What it decided: one stack, httpx, although aiohttp reads faster here. aiohttp parses HTTP
in C; httpx (h11) handles each chunk in Python, and a watch arrives as one chunk per event,
so the gap is widest on a watch's catch-up. The informers' steady load is a few events a
second, a relist of 5,000 objects takes about a second with either, and httpx is what every
other caller uses (delegated authentication and authorization, the shim, the in-process
transports their tests run on); two stacks meant two ways of loading TLS and credentials.

``python -m bench.kubeclientbench`` updates only the ``kubeclient`` section of RESULTS.md.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from apiserver.kubeclient import KubeClient, load_kubeconfig

from . import machine, report
from .stats import Figure
from .targets import APIServerTarget

SECTION = "kubeclient"
PATH = "/apis/resource.k8s.io/v1/resourceslices"
LISTED, EVENTS, PAGE, ROUNDS, THREADS = 5_000, 10_000, 500, 7, 8


@dataclass
class Outcome:
    list_seconds: dict[str, Figure]
    watch_seconds: dict[str, Figure]


def _slice(index: int) -> dict[str, Any]:
    name = f"bench-{index:05d}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name, "labels": {"set": "a" if index < LISTED else "b"}},
        "spec": {
            "driver": "bench.example.com",
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "nodeName": f"node-{index % 100}",
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "x"}}}],
        },
    }


def _fill(server: APIServerTarget) -> str:
    """Write the slices; the resourceVersion from before the first one."""
    with server.client() as http:
        before = str(http.get(PATH, params={"limit": "1"}).json()["metadata"]["resourceVersion"])

    def write(indexes: range) -> None:
        with server.client() as http:
            for i in indexes:
                answer = http.post(PATH, json=_slice(i))
                if answer.status_code != 201:
                    raise RuntimeError(f"create: {answer.status_code} {answer.text[:200]}")

    step = EVENTS // THREADS
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(write, [range(i, min(i + step, EVENTS)) for i in range(0, EVENTS, step)]))
    return before


async def _httpx_list(api: KubeClient) -> int:
    return len((await api.list(PATH, {"labelSelector": "set=a"}, page_size=PAGE)).items)


async def _httpx_watch(api: KubeClient, since: str) -> int:
    seen = 0
    async for _event in api.watch(PATH, resource_version=since):
        seen += 1
        if seen == EVENTS:
            break
    return seen


async def _aiohttp_get(api: Any, query: dict[str, Any]) -> Any:
    return await api.call_api(
        PATH,
        "GET",
        query_params=list(query.items()),
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
    )


async def _aiohttp_list(api: Any) -> int:
    items, token = 0, ""
    while True:
        query = {"labelSelector": "set=a", "limit": PAGE, **({"continue": token} if token else {})}
        response = await _aiohttp_get(api, query)
        try:
            page = orjson.loads(await response.read())
        finally:
            response.release()
        items += len(page["items"])
        token = page["metadata"].get("continue") or ""
        if not token:
            return items


async def _aiohttp_watch(api: Any, since: str) -> int:
    seen, pending = 0, bytearray()
    response = await _aiohttp_get(api, {"watch": "true", "resourceVersion": since})
    try:
        async for chunk in response.content.iter_any():
            pending += chunk
            while (end := pending.find(b"\n")) >= 0:
                orjson.loads(bytes(pending[:end]))
                del pending[: end + 1]
                seen += 1
                if seen == EVENTS:
                    return seen
    finally:
        response.release()
    return seen


async def _timed(run: Callable[[], Awaitable[int]], expect: int) -> float:
    began = time.perf_counter()
    got = await run()
    if got != expect:
        raise RuntimeError(f"expected {expect}, got {got}")
    return time.perf_counter() - began


async def _measure(server: APIServerTarget, since: str, log: Callable[[str], object]) -> Outcome:
    kubeconfig = server.workdir / "kubeconfig"
    configuration = k8s.Configuration()
    await k8s_config.load_kube_config(str(kubeconfig), client_configuration=configuration)
    lists: dict[str, list[float]] = {"httpx": [], "aiohttp": []}
    watches: dict[str, list[float]] = {"httpx": [], "aiohttp": []}
    async with (
        KubeClient(load_kubeconfig(kubeconfig), timeout=120) as mine,
        k8s.ApiClient(configuration=configuration) as theirs,
    ):
        stacks: dict[str, tuple[Callable[[], Awaitable[int]], Callable[[], Awaitable[int]]]] = {
            "httpx": (lambda: _httpx_list(mine), lambda: _httpx_watch(mine, since)),
            "aiohttp": (lambda: _aiohttp_list(theirs), lambda: _aiohttp_watch(theirs, since)),
        }
        for round_ in range(ROUNDS + 1):  # the first round warms both up and is not kept
            for name, (listing, watching) in stacks.items():
                list_s, watch_s = await _timed(listing, LISTED), await _timed(watching, EVENTS)
                log(f"round {round_} {name}: list {list_s:.3f} s, watch {watch_s:.3f} s")
                if round_:
                    lists[name].append(list_s)
                    watches[name].append(watch_s)
    return Outcome(
        {k: Figure(v) for k, v in lists.items()}, {k: Figure(v) for k, v in watches.items()}
    )


def run(log: Callable[[str], object] = print) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="bench-kubeclient-") as tmp:
        server = APIServerTarget("apiserver", Path(tmp), extra=["--watch-history", "20000"])
        server.start()
        try:
            since = _fill(server)
            log(f"{EVENTS} slices written after resourceVersion {since}")
            return asyncio.run(_measure(server, since, log))
        finally:
            server.stop()


def render(outcome: Outcome, date: str) -> str:
    rows = [
        "| figure | httpx (kubeclient) | aiohttp (kubernetes-asyncio) | ratio |",
        "|---|---|---|---|",
    ]
    for label, figures, count, unit in (
        (f"list {LISTED:,} objects, pages of {PAGE}", outcome.list_seconds, LISTED, "objects/s"),
        (f"watch {EVENTS:,} events", outcome.watch_seconds, EVENTS, "events/s"),
    ):
        mine, theirs = figures["httpx"], figures["aiohttp"]
        rows.append(
            f"| {label}: seconds | {report.with_spread(mine, ' s')} "
            f"| {report.with_spread(theirs, ' s')} | {report.ratio(mine.median, theirs.median)} |"
        )
        rows.append(
            f"| {label}: {unit} | {report.number(count / mine.median)} "
            f"| {report.number(count / theirs.median)} "
            f"| {report.ratio(theirs.median, mine.median)} |"
        )
    return "\n".join(
        [
            "## Client layer: one HTTP stack (httpx) against kubernetes-asyncio (aiohttp)",
            "",
            f"Run: {date}, on {machine.cpu_model()} ({machine.cores()} cores). One server "
            "(SQLite) holding 10,000 one-device ResourceSlices; per stack and round, a paged "
            f"list of {LISTED:,} of them and a watch of {EVENTS:,} events from before the "
            f"first, both decoded; {ROUNDS} rounds after a warm-up round, the stacks "
            "alternating. Seconds: lower is better; ratio below 1 means httpx took less.",
            "",
            *rows,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    return report.section_main(__name__, __doc__, SECTION, lambda log: run(log), render, argv)


if __name__ == "__main__":
    raise SystemExit(main())

"""The HTTP stack of the client layer: ``apiserver.kubeclient`` (its JSON calls over its own
wire, kept-alive HTTP/1.1 parsed by httptools; its watches through httpx's interface on
aiohttp's transport) against the same client with every request on aiohttp's transport
(what the calls went through before the wire), on httpx's own transport (httpcore, TLS
through anyio), and kubernetes-asyncio's aiohttp ``ApiClient`` (how the sources read a
kube-apiserver before), over the real server, in the same run.

One ``python -m apiserver serve`` (SQLite) holds 10,000 ResourceSlices of one device each,
written after a recorded resourceVersion: 5,000 labelled ``set=a``, 5,000 ``set=b``. Each
round, alternating the stacks, (1) lists the 5,000 of ``set=a`` in pages of 500, (2)
watches from the recorded resourceVersion until 10,000 events are decoded and (3) GETs one
slice 500 times, one after another, timing this process's CPU per request (the server's is
not counted). The kubernetes-asyncio baseline does what its source did: ``call_api`` with
``_preload_content=False``, pages read whole, the watch's chunks split into lines by hand,
each line decoded with orjson. The client layer does the same through ``KubeClient.list``,
``KubeClient.watch`` and ``KubeClient.get``.

What it decided: httpx's interface for streams and for the in-process transports of tests,
over aiohttp. httpx's own stack runs TLS in Python through anyio and spent about 2 ms of
CPU on each small request. Then the calls' own wire: through httpx's request and response
objects on aiohttp a small call still cost its client more CPU than the server spent
answering it, and a pod through the scheduler shim is seven calls between the shim and
the process playing kube-scheduler (bench/RESULTS.md "Scheduling").

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

import httpx
import orjson
from httpx_aiohttp import AiohttpTransport
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from apiserver.kubeclient import KubeClient, load_kubeconfig
from apiserver.kubeclient.transport import ssl_context

from . import machine, report
from .stats import Figure
from .targets import APIServerTarget

SECTION = "kubeclient"
PATH = "/apis/resource.k8s.io/v1/resourceslices"
LISTED, EVENTS, PAGE, ROUNDS, THREADS, GETS = 5_000, 10_000, 500, 7, 8, 500
OURS, AIOHTTP = "kubeclient (its wire)", "kubeclient on aiohttp's transport"
HTTPX = "kubeclient on httpx's own transport"
BASELINE = "kubernetes-asyncio"
STACKS = (OURS, AIOHTTP, HTTPX, BASELINE)
ONE = f"{PATH}/bench-00000"


@dataclass
class Outcome:
    list_seconds: dict[str, Figure]
    watch_seconds: dict[str, Figure]
    get_cpu: dict[str, Figure]
    """This process's CPU seconds per GET."""


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


async def _httpx_get(api: KubeClient) -> int:
    for _ in range(GETS):
        await api.get(ONE)
    return GETS


async def _aiohttp_get(api: Any, query: dict[str, Any], path: str = PATH) -> Any:
    return await api.call_api(
        path,
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


async def _aiohttp_gets(api: Any) -> int:
    for _ in range(GETS):
        response = await _aiohttp_get(api, {}, ONE)
        try:
            orjson.loads(await response.read())
        finally:
            response.release()
    return GETS


async def _cpu_each(run: Callable[[], Awaitable[int]], expect: int) -> float:
    began = time.process_time()
    got = await run()
    if got != expect:
        raise RuntimeError(f"expected {expect}, got {got}")
    return (time.process_time() - began) / got


async def _timed(run: Callable[[], Awaitable[int]], expect: int) -> float:
    began = time.perf_counter()
    got = await run()
    if got != expect:
        raise RuntimeError(f"expected {expect}, got {got}")
    return time.perf_counter() - began


Runs = tuple[Callable[[], Awaitable[int]], ...]


def _runs(api: KubeClient, since: str) -> Runs:
    return (lambda: _httpx_list(api), lambda: _httpx_watch(api, since), lambda: _httpx_get(api))


async def _measure(server: APIServerTarget, since: str, log: Callable[[str], object]) -> Outcome:
    kubeconfig = server.workdir / "kubeconfig"
    configuration = k8s.Configuration()
    await k8s_config.load_kube_config(str(kubeconfig), client_configuration=configuration)
    config = load_kubeconfig(kubeconfig)
    own_stack = httpx.AsyncHTTPTransport(verify=ssl_context(config))
    on_aiohttp = AiohttpTransport(verify=ssl_context(config))
    figures: dict[str, dict[str, list[float]]] = {
        what: {name: [] for name in STACKS} for what in ("list", "watch", "get")
    }
    async with (
        KubeClient(config, timeout=120) as ours,
        KubeClient(config, timeout=120, transport=on_aiohttp) as aiohttp_only,
        KubeClient(config, timeout=120, transport=own_stack) as plain,
        k8s.ApiClient(configuration=configuration) as theirs,
    ):
        stacks: dict[str, Runs] = {
            OURS: _runs(ours, since),
            AIOHTTP: _runs(aiohttp_only, since),
            HTTPX: _runs(plain, since),
        }
        stacks[BASELINE] = (
            lambda: _aiohttp_list(theirs),
            lambda: _aiohttp_watch(theirs, since),
            lambda: _aiohttp_gets(theirs),
        )
        for round_ in range(ROUNDS + 1):  # the first round warms every stack and is not kept
            for name, (listing, watching, getting) in stacks.items():
                list_s, watch_s = await _timed(listing, LISTED), await _timed(watching, EVENTS)
                get_cpu = await _cpu_each(getting, GETS)
                log(
                    f"round {round_} {name}: list {list_s:.3f} s, watch {watch_s:.3f} s, "
                    f"GET {get_cpu * 1e6:.0f} us CPU"
                )
                if round_:
                    for what, value in (("list", list_s), ("watch", watch_s), ("get", get_cpu)):
                        figures[what][name].append(value)
    kept = {what: {k: Figure(v) for k, v in by.items()} for what, by in figures.items()}
    return Outcome(kept["list"], kept["watch"], kept["get"])


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
        f"| figure | {OURS} | {AIOHTTP} | ratio | {HTTPX} | ratio | {BASELINE} | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, figures in (
        (f"list {LISTED:,} objects, pages of {PAGE}: seconds", outcome.list_seconds),
        (f"watch {EVENTS:,} events: seconds", outcome.watch_seconds),
    ):
        rows.append(_row(label, figures, lambda f: report.with_spread(f, " s")))
    microseconds = {k: Figure([v * 1e6 for v in f.values]) for k, f in outcome.get_cpu.items()}
    rows.append(
        _row(
            "GET one object: client CPU per request", microseconds, lambda f: f"{f.median:,.0f} us"
        )
    )
    return "\n".join(
        [
            "## Client layer: this client's wire for calls, against aiohttp's transport and"
            " httpx's own under httpx's interface, and kubernetes-asyncio",
            "",
            f"Run: {date}, on {machine.cpu_model()} ({machine.cores()} cores). One server "
            "(SQLite) holding 10,000 one-device ResourceSlices; per stack and round, a paged "
            f"list of {LISTED:,} of them, a watch of {EVENTS:,} events from before the "
            f"first, both decoded, and {GETS} GETs of one of them one after another (this "
            f"process's CPU per GET); {ROUNDS} rounds after a warm-up round, the stacks "
            "alternating. Lower is better; each ratio is this client's figure over the "
            "other's (below 1: this client took less).",
            "",
            *rows,
        ]
    )


def _row(label: str, figures: dict[str, Figure], shown: Callable[[Figure], str]) -> str:
    mine = figures[OURS]
    cells = [shown(mine)]
    for other in (AIOHTTP, HTTPX, BASELINE):
        cells += [shown(figures[other]), report.ratio(mine.median, figures[other].median)]
    return f"| {label} | {' | '.join(cells)} |"


def main(argv: list[str] | None = None) -> int:
    return report.section_main(__name__, __doc__, SECTION, lambda log: run(log), render, argv)


if __name__ == "__main__":
    raise SystemExit(main())

"""The scheduler shim over HTTPS, beside the AllocationReview it asks, on the same objects.

The real server process and the real shim process (``python -m apiserver shim``), each
over HTTPS on loopback; this process plays kube-scheduler. A cluster of N nodes (100, then
500, each on a fresh server) with 4 node-local GPUs per node and one one-GPU claim per pod.

* per pod: an AllocationReview of the pod's claim over all N nodes, posted straight to the
  server (the baseline: what the shim's filter asks; before it, untimed in the ratios, a
  first review that waits for the server's caches to catch up with the previous pod's
  writes, reported on its own), then the pod through the shim as the
  scheduler drives it: filter over the N nodes (a scores-only review), prioritize over the
  nodes that fit (scored from the filter's answer), bind to a best-scoring one (the claim
  read, a reserving review on that node, the claim's status written, ``pods/binding``).
  Alternating, so both see the same load. p50 of each, and the ratios.
* throughput: pods bound per second with node-local devices, the scheduler's way: filter
  and prioritize one pod after another, binds running concurrently; beside it, in the same
  run, AllocationReviews over the N nodes one after another (the rate if placing a pod
  cost one review and nothing else). A bind that lost its device to a concurrent one is
  retried from filter, as the scheduler would, and counted.

``python -m bench.shim`` updates only the ``shim`` section of RESULTS.md.
"""

from __future__ import annotations

import asyncio
import os
import random
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from apiserver.toolkit import JSON
from devtools.process import ChildProcess, free_port, http_probe

from . import report
from .targets import REPO, APIServerTarget, async_client

SECTION = "shim"
SIZES = (100, 500)
PER_NODE = 4
LATENCY_PODS = 20
THROUGHPUT_PODS = 60
DRIVER = "gpu.bench.example.com"
NS = "default"
REVIEWS = "/apis/resource.k8s.io/v1alpha3/allocationreviews"


class ShimTarget:
    """The shim process, reading the server with its admin kubeconfig."""

    def __init__(
        self, server: APIServerTarget, workdir: Path, extra: list[str] | None = None
    ) -> None:
        """``extra`` flags go after the usual ones."""
        self.server = server
        self.workdir = workdir
        self.extra = list(extra or [])
        self.port = free_port()
        self.process = ChildProcess("shim", workdir / "shim.log", cwd=REPO)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca(self) -> str:
        return str(self.workdir / "shim-certs" / "ca.crt")

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca)

    @property
    def scheduler_certificate(self) -> tuple[Path, Path]:
        """The client certificate and key kube-scheduler presents (which the shim makes
        beside its CA)."""
        certs = self.workdir / "shim-certs"
        return certs / "scheduler.crt", certs / "scheduler.key"

    def scheduler_context(self) -> ssl.SSLContext:
        """As kube-scheduler reaches the shim: trusting its CA, presenting the scheduler's
        client certificate."""
        context = self.ssl_context()
        context.load_cert_chain(*self.scheduler_certificate)
        return context

    def start(self) -> None:
        command = [
            sys.executable,
            "-m",
            "apiserver",
            "shim",
            "--kubeconfig",
            str(self.server.workdir / "kubeconfig"),
            "--bind-address",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--cert-dir",
            str(self.workdir / "shim-certs"),
            "--log-level",
            "warning",
            *self.extra,
        ]
        self.process.start(command, http_probe(f"{self.url}/healthz", self.ssl_context), 30.0)

    def stop(self) -> None:
        self.process.stop()


# -- the cluster ----------------------------------------------------------------------


def cluster_objects(nodes: list[str], per_node: int) -> list[tuple[str, JSON]]:
    """What both scheduling benchmarks create, as (collection path, object): the DeviceClass
    of ``DRIVER``, and per node the Node and one slice of its own pool (named after the node)
    with ``per_node`` devices ``dev-0``, ``dev-1``, ... each with an ``index`` attribute."""
    out: list[tuple[str, JSON]] = [
        (
            "/apis/resource.k8s.io/v1/deviceclasses",
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": DRIVER},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            },
        )
    ]
    for name in nodes:
        out.append(
            ("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
        )
        out.append(
            (
                "/apis/resource.k8s.io/v1/resourceslices",
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{name}-devices"},
                    "spec": {
                        "driver": DRIVER,
                        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                        "nodeName": name,
                        "devices": [
                            {"name": f"dev-{i}", "attributes": {"index": {"int": i}}}
                            for i in range(per_node)
                        ],
                    },
                },
            )
        )
    return out


def _pod_objects(name: str) -> list[tuple[str, JSON]]:
    request = {"name": "gpu", "exactly": {"deviceClassName": DRIVER}}
    return [
        (
            f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims",
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": name},
                "spec": {"devices": {"requests": [request]}},
            },
        ),
        (
            f"/api/v1/namespaces/{NS}/pods",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name},
                "spec": {
                    "containers": [{"name": "main", "image": "busybox"}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                },
            },
        ),
    ]


async def _create(api: httpx.AsyncClient, objects: list[tuple[str, JSON]]) -> None:
    gate = asyncio.Semaphore(8)

    async def one(path: str, body: JSON) -> None:
        async with gate:
            answer = await api.post(path, json=body)
            if answer.status_code != 201:
                raise RuntimeError(f"creating {path}: {answer.status_code} {answer.text[:300]}")

    # Classes and nodes before the slices and claims that name them.
    await asyncio.gather(*(one(p, b) for p, b in objects if "resourceslices" not in p))
    await asyncio.gather(*(one(p, b) for p, b in objects if "resourceslices" in p))


async def _pods(api: httpx.AsyncClient, names: list[str]) -> dict[str, JSON]:
    await _create(api, [o for n in names for o in _pod_objects(n) if "claims" in o[0]])
    await _create(api, [o for n in names for o in _pod_objects(n) if "pods" in o[0]])
    found = {}
    for name in names:
        found[name] = (await api.get(f"/api/v1/namespaces/{NS}/pods/{name}")).json()
    return found


# -- one pod ----------------------------------------------------------------------------


async def _review(api: httpx.AsyncClient, pod: JSON, nodes: list[str]) -> float:
    body = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "AllocationReview",
        "spec": {
            "claims": [{"namespace": NS, "name": pod["metadata"]["name"]}],
            "nodeNames": nodes,
        },
    }
    began = time.perf_counter()
    answer = await api.post(REVIEWS, json=body)
    took = time.perf_counter() - began
    if answer.status_code != 201:
        raise RuntimeError(f"review: {answer.status_code} {answer.text[:300]}")
    return took


@dataclass
class Placement:
    filter: float
    prioritize: float
    bind: float
    error: str

    @property
    def total(self) -> float:
        return self.filter + self.prioritize + self.bind


async def _choose(shim: httpx.AsyncClient, pod: JSON, nodes: list[str]) -> tuple[str, float, float]:
    """Filter then prioritize; a best-scoring node, chosen at random among ties as the
    scheduler does."""
    began = time.perf_counter()
    filtered = (await shim.post("/filter", json={"Pod": pod, "NodeNames": nodes})).json()
    filter_took = time.perf_counter() - began
    fits = filtered.get("NodeNames") or []
    if filtered.get("Error") or not fits:
        raise RuntimeError(f"filter: {filtered.get('Error') or 'no node fits'}")
    began = time.perf_counter()
    scores = (await shim.post("/prioritize", json={"Pod": pod, "NodeNames": fits})).json()
    prioritize_took = time.perf_counter() - began
    best = max(s["Score"] for s in scores)
    node = random.choice([s["Host"] for s in scores if s["Score"] == best])
    return node, filter_took, prioritize_took


async def _bind(shim: httpx.AsyncClient, pod: JSON, node: str) -> tuple[float, str]:
    meta = pod["metadata"]
    args = {"PodName": meta["name"], "PodNamespace": NS, "PodUID": meta["uid"], "Node": node}
    began = time.perf_counter()
    answer = (await shim.post("/bind", json=args)).json()
    return time.perf_counter() - began, str(answer.get("Error") or "")


async def _place(shim: httpx.AsyncClient, pod: JSON, nodes: list[str]) -> Placement:
    node, filter_took, prioritize_took = await _choose(shim, pod, nodes)
    bind_took, error = await _bind(shim, pod, node)
    return Placement(filter_took, prioritize_took, bind_took, error)


# -- a run at one size ------------------------------------------------------------------


@dataclass
class SizeOutcome:
    nodes: int
    catch_ups: list[float]
    """The first review after the previous pod's bind wrote."""
    reviews: list[float]
    placements: list[Placement]
    bound: int
    bound_seconds: float
    retries: int
    serial_reviews: int
    serial_seconds: float

    @property
    def pods_per_second(self) -> float:
        return self.bound / self.bound_seconds

    @property
    def reviews_per_second(self) -> float:
        return self.serial_reviews / self.serial_seconds


async def _throughput(
    shim: httpx.AsyncClient, pods: list[JSON], nodes: list[str]
) -> tuple[int, float, int]:
    """Pods bound, seconds, retries: filter and prioritize in turn, binds concurrent."""
    retries = 0
    queue = list(pods)
    binds: set[asyncio.Task[tuple[JSON, str]]] = set()

    async def bind(pod: JSON, node: str) -> tuple[JSON, str]:
        return pod, (await _bind(shim, pod, node))[1]

    bound = 0
    began = time.perf_counter()
    while queue or binds:
        if queue:
            pod = queue.pop(0)
            node, _, _ = await _choose(shim, pod, nodes)
            binds.add(asyncio.create_task(bind(pod, node)))
        ready = {t for t in binds if t.done()}
        if not queue and not ready:
            ready, _ = await asyncio.wait(binds, return_when=asyncio.FIRST_COMPLETED)
        for task in ready:
            binds.discard(task)
            pod, error = task.result()
            if error:
                retries += 1
                queue.append(pod)
            else:
                bound += 1
    return bound, time.perf_counter() - began, retries


async def _run_size(server: APIServerTarget, shim_target: ShimTarget, nodes: int) -> SizeOutcome:
    names = [f"node-{n:03d}" for n in range(nodes)]
    async with (
        async_client(server.url, server.ssl_context(), server.headers, 120) as api,
        async_client(shim_target.url, shim_target.scheduler_context(), timeout=120) as shim,
    ):
        await _create(api, cluster_objects(names, PER_NODE))
        latency = await _pods(api, [f"latency-{i:03d}" for i in range(LATENCY_PODS)])
        throughput = await _pods(api, [f"rate-{i:03d}" for i in range(THROUGHPUT_PODS)])
        # Warm both paths (CEL compile, connections) on a pod that is then left alone.
        warm = next(iter(latency.values()))
        await _review(api, warm, names)
        await _choose(shim, warm, names)

        catch_ups, reviews, placements = [], [], []
        for pod in list(latency.values())[1:]:
            # The first review after a write waits for the server's caches to catch up
            # (the previous bind wrote): timed apart, so both paths then start settled.
            catch_ups.append(await _review(api, pod, names))
            reviews.append(await _review(api, pod, names))
            placement = await _place(shim, pod, names)
            if placement.error:
                raise RuntimeError(f"bind failed: {placement.error}")
            placements.append(placement)

        serial_began = time.perf_counter()
        for pod in throughput.values():
            await _review(api, pod, names)
        serial_seconds = time.perf_counter() - serial_began
        bound, seconds, retries = await _throughput(shim, list(throughput.values()), names)
    return SizeOutcome(
        nodes,
        catch_ups,
        reviews,
        placements,
        bound,
        seconds,
        retries,
        len(throughput),
        serial_seconds,
    )


@dataclass
class Outcome:
    sizes: list[SizeOutcome]
    load: tuple[float, float]


def run(log: Callable[[str], Any] = print) -> Outcome:
    load_before = os.getloadavg()[0]
    outcomes = []
    for nodes in SIZES:
        with tempfile.TemporaryDirectory(prefix="bench-shim-") as directory:
            workdir = Path(directory)
            server = APIServerTarget("server", workdir)
            server.start()
            shim = ShimTarget(server, workdir)
            try:
                shim.start()
                log(f"shim: {nodes} nodes")
                outcome = asyncio.run(_run_size(server, shim, nodes))
                log(
                    f"  review p50 {statistics.median(outcome.reviews) * 1000:.1f} ms,"
                    f" filter+prioritize+bind p50"
                    f" {statistics.median(p.total for p in outcome.placements) * 1000:.1f} ms,"
                    f" {outcome.pods_per_second:.1f} pods/s ({outcome.retries} retries)"
                )
                outcomes.append(outcome)
            finally:
                shim.stop()
                server.stop()
    return Outcome(outcomes, (load_before, os.getloadavg()[0]))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def render(outcome: Outcome, date: str) -> str:
    lines = [
        "## Scheduler shim: filter, prioritize and bind over HTTPS beside the AllocationReview"
        " alone",
        "",
        f"Run: {date}. The server process and the shim process, each over HTTPS on loopback;"
        " this process plays kube-scheduler (NodeNames, as `nodeCacheCapable: true`)."
        f" {PER_NODE} node-local GPUs per node, one one-GPU claim per pod, a fresh server per"
        f" size. Load average (1 min) before and after: {outcome.load[0]:.1f} /"
        f" {outcome.load[1]:.1f} on {os.cpu_count()} cores.",
        "",
        f"Per pod ({LATENCY_PODS - 1} pods, p50): the baseline is one AllocationReview of the"
        " pod's claim over all nodes, posted straight to the server; then the same pod through"
        " the shim: filter (that review, scores only, asked by the shim), prioritize over the"
        " nodes that fit (scored from the filter's answer, no request) and bind (a reserving"
        " review on the chosen node, the claim's status written, pinned to the version that"
        " review read, `pods/binding`; the server releases the reservation once its caches"
        " show the claim).",
        "",
        "| nodes | first review after a write | AllocationReview alone | shim filter"
        " | filter / review | shim prioritize | shim bind | filter + prioritize + bind"
        " | total / review |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in outcome.sizes:
        review = statistics.median(s.reviews)
        filtered = statistics.median(p.filter for p in s.placements)
        total = statistics.median(p.total for p in s.placements)
        lines.append(
            f"| {s.nodes} | {_ms(statistics.median(s.catch_ups))} | {_ms(review)}"
            f" | {_ms(filtered)} | {report.ratio(filtered, review)}"
            f" | {_ms(statistics.median(p.prioritize for p in s.placements))}"
            f" | {_ms(statistics.median(p.bind for p in s.placements))}"
            f" | {_ms(total)} | {report.ratio(total, review)} |"
        )
    lines += [
        "",
        f"Throughput ({THROUGHPUT_PODS} pods): pods bound per second with node-local devices,"
        " filter and prioritize one pod after another and binds concurrent (as kube-scheduler"
        " runs its binding cycles); the baseline is AllocationReviews of the same pods' claims"
        " over all nodes one after another, in the same run. A bind that lost its device to"
        " a concurrent one is retried from filter.",
        "",
        "| nodes | pods/s through the shim | AllocationReviews/s alone | ratio | binds retried |",
        "|---|---|---|---|---|",
    ]
    for s in outcome.sizes:
        lines.append(
            f"| {s.nodes} | {s.pods_per_second:,.1f} | {s.reviews_per_second:,.1f}"
            f" | {report.ratio(s.pods_per_second, s.reviews_per_second)} | {s.retries} |"
        )
    lines += [
        "",
        "A pod costs the shim one review over the candidate nodes (filter) and a second on"
        " one node (bind's), plus its writes. The first AllocationReview after a write (first column) first brings the server's"
        " caches to the store's revision; the caches of kinds nobody wrote are asked for"
        " progress at once rather than waiting for the next periodic progress report (which"
        " cost about a second per pod before: 879 ms and 1.0 pods/s at 100 nodes on an"
        " earlier run)."
        " The machine is shared, so single runs vary; compare the ratios.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return report.section_main("bench.shim", __doc__, SECTION, run, render, argv)


if __name__ == "__main__":
    sys.exit(main())

"""The shim's filter and prioritize over the real server with scores-only reviews, and bind
still allocating: AllocationReview ``spec.answer: Scores`` through kubectl (no allocations,
the same feasibility and scores, a few dozen bytes per node, the same ``stateVersion`` while
nothing changes), bad answer modes refused naming the field with nothing stored; the shim
(in process, its API client over HTTPS to the server, recording the reviews it asks) filters
with small answers, prioritizes from the filter's answer without a review of its own (even
after another pod's bind: the bind reserves anew); many pods placed at once over several
rounds never share a device."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest
import yaml

from apiserver.api.resource import NEEDS_ATTACHING
from apiserver.kubeclient import KubeClient, load_kubeconfig
from apiserver.shim.app import build_app
from apiserver.shim.paths import Paths

from .harness import REPO, ServerProcess, start_server
from .objects import bind_args, create_pod_with_claim, pod_object, unique

GROUP = "resource.k8s.io"
PATH = f"/apis/{GROUP}/v1alpha3/allocationreviews"
NS = "default"
SCORES_BYTES_PER_NODE = 160
"""A Scores entry: node name, feasible, score (or the reasons of an infeasible node)."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_server(tmp_path_factory.mktemp("scores"), [])
    for name in ("00-deviceclasses.yaml", "05-nodes.yaml", "10-node-slices.yaml"):
        server.kubectl("apply", "-f", str(REPO / "examples" / name))
    yield server
    server.stop()


def _nodes(server: ServerProcess) -> list[str]:
    items = server.client().get("/api/v1/nodes").json()["items"]
    return sorted(n["metadata"]["name"] for n in items)


def _review(server: ServerProcess, spec: dict[str, Any]) -> dict[str, Any]:
    body = {"apiVersion": f"{GROUP}/v1alpha3", "kind": "AllocationReview", "spec": spec}
    out = server.kubectl("create", "-f", "-", "-o", "yaml", input=yaml.safe_dump(body)).stdout
    answer: dict[str, Any] = yaml.safe_load(out)
    return answer


GPU_REQUEST = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}


def _gpu_claim() -> dict[str, Any]:
    return {"devices": {"requests": [GPU_REQUEST]}}


def test_scores_answer_over_kubectl(cluster: ServerProcess) -> None:
    nodes = _nodes(cluster)
    claims = [{"name": "one-gpu", "spec": _gpu_claim()}]
    full = _review(cluster, {"claims": claims, "nodeNames": nodes})["status"]
    small = _review(cluster, {"claims": claims, "nodeNames": nodes, "answer": "Scores"})["status"]
    assert any(n["feasible"] for n in small["nodes"])
    assert all("allocations" not in n for n in small["nodes"])
    assert all(n["allocations"] for n in full["nodes"] if n["feasible"])
    shape = [(n["nodeName"], n["feasible"], n["score"]) for n in small["nodes"]]
    assert shape == [(n["nodeName"], n["feasible"], n["score"]) for n in full["nodes"]]
    assert small["stateVersion"] == full["stateVersion"]  # nothing changed in between
    size = len(orjson.dumps(small["nodes"]))
    assert size <= SCORES_BYTES_PER_NODE * len(nodes)
    assert size < len(orjson.dumps(full["nodes"]))
    probe = _review(cluster, {"claims": claims, "nodeNames": [], "answer": "Scores"})["status"]
    assert probe["stateVersion"] == full["stateVersion"]
    assert not probe.get("nodes")
    scores = {"claims": claims, "nodeNames": nodes, "answer": "Scores"}
    known = _review(cluster, {**scores, "knownStateVersion": full["stateVersion"]})["status"]
    assert known == {"stateVersion": full["stateVersion"], "unchanged": True}
    older = _review(cluster, {**scores, "knownStateVersion": "an-older-version"})["status"]
    assert not older.get("unchanged")
    assert [(n["nodeName"], n["feasible"], n["score"]) for n in older["nodes"]] == shape


def test_bad_answer_modes_name_the_field_and_store_nothing(cluster: ServerProcess) -> None:
    claims = [{"name": "one-gpu", "spec": _gpu_claim()}]
    client = cluster.client()
    reservations = f"/apis/{GROUP}/v1alpha3/devicereservations"
    before = client.get(reservations).json()["items"]
    for spec, named in (
        ({"claims": claims, "answer": "Everything"}, "spec.answer"),
        ({"claims": claims, "answer": "Scores", "reserve": True}, "spec.answer"),
        ({"claims": claims, "reserve": True, "knownStateVersion": "v"}, "spec.knownStateVersion"),
        ({"claims": claims, "knownStateVersion": "v" * 65}, "spec.knownStateVersion"),
    ):
        body = {"apiVersion": f"{GROUP}/v1alpha3", "kind": "AllocationReview", "spec": spec}
        answer = client.post(PATH, json=body)
        assert answer.status_code == 422, answer.text
        assert [c["field"] for c in answer.json()["details"]["causes"]] == [named]
    assert client.get(reservations).json()["items"] == before


class Recording(httpx.AsyncBaseTransport):
    """The shim's transport to the server, keeping each request's method and path, and
    each AllocationReview and its answer."""

    def __init__(self, server: httpx.AsyncBaseTransport) -> None:
        self.server = server
        self.requests: list[tuple[str, str]] = []
        self.reviews: list[tuple[dict[str, Any], bytes]] = []
        self.after_reserving: Callable[[], None] | None = None
        """Run once a reserving review is answered, before the shim reads the answer."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path))
        response = await self.server.handle_async_request(request)
        if request.url.path.endswith("/allocationreviews"):
            content = await response.aread()
            spec = orjson.loads(request.content)["spec"]
            self.reviews.append((spec, content))
            if spec.get("reserve") and self.after_reserving is not None:
                self.after_reserving()
            return httpx.Response(response.status_code, headers=response.headers, content=content)
        return response


@pytest.fixture
async def recording(cluster: ServerProcess) -> AsyncIterator[Recording]:
    transport = httpx.AsyncHTTPTransport(verify=cluster.ssl_context())
    yield Recording(transport)
    await transport.aclose()


@pytest.fixture
async def shim(cluster: ServerProcess, recording: Recording) -> AsyncIterator[httpx.AsyncClient]:
    below = KubeClient(load_kubeconfig(cluster.kubeconfig), transport=recording)
    app = build_app(below, Paths())
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app), base_url="http://shim", timeout=60
    ) as client:
        yield client
    await below.aclose()


def _pod(server: ServerProcess) -> dict[str, Any]:
    pod, _ = create_pod_with_claim(server, GPU_REQUEST, namespace=NS)
    return pod


async def _filter(shim: httpx.AsyncClient, pod: dict[str, Any], nodes: list[str]) -> list[str]:
    answer = (await shim.post("/filter", json={"Pod": pod, "NodeNames": nodes})).json()
    assert answer["Error"] == ""
    fits: list[str] = answer["NodeNames"]
    return fits


async def _prioritize(shim: httpx.AsyncClient, pod: dict[str, Any], fits: list[str]) -> str:
    scores = (await shim.post("/prioritize", json={"Pod": pod, "NodeNames": fits})).json()
    best = max(s["Score"] for s in scores)
    host: str = next(s["Host"] for s in scores if s["Score"] == best)
    return host


async def _bind(shim: httpx.AsyncClient, pod: dict[str, Any], node: str) -> str:
    error: str = (await shim.post("/bind", json=bind_args(pod, node))).json()["Error"]
    return error


def _allocated(server: ServerProcess, pod: dict[str, Any]) -> tuple[str, str, str]:
    claim = pod["spec"]["resourceClaims"][0]["resourceClaimName"]
    status = server.client().get(f"/apis/{GROUP}/v1/namespaces/{NS}/resourceclaims/{claim}")
    [result] = status.json()["status"]["allocation"]["devices"]["results"]
    return result["driver"], result["pool"], result["device"]


async def test_filter_and_prioritize_use_small_answers_and_bind_allocates(
    cluster: ServerProcess, shim: httpx.AsyncClient, recording: Recording
) -> None:
    nodes = _nodes(cluster)
    first, second = _pod(cluster), _pod(cluster)
    fits = await _filter(shim, first, nodes)
    assert fits
    [(spec, answered)] = recording.reviews
    assert spec["answer"] == "Scores"
    assert orjson.loads(answered)["status"]["stateVersion"]
    entries = orjson.loads(answered)["status"]["nodes"]
    assert all("allocations" not in e for e in entries)
    # The claim as the review read it: what the bind's status write is pinned to.
    claim = first["spec"]["resourceClaims"][0]["resourceClaimName"]
    meta = cluster.client().get(f"/apis/{GROUP}/v1/namespaces/{NS}/resourceclaims/{claim}")
    uid, version = meta.json()["metadata"]["uid"], meta.json()["metadata"]["resourceVersion"]
    assert orjson.loads(answered)["status"]["claims"] == [
        {"namespace": NS, "name": claim, "uid": uid, "resourceVersion": version, "allocated": False}
    ]
    assert len(orjson.dumps(entries)) <= SCORES_BYTES_PER_NODE * len(nodes)

    node = await _prioritize(shim, first, fits)
    assert len(recording.reviews) == 1  # prioritize scored from the filter's answer
    best = max(e["score"] for e in entries if e["feasible"])
    assert next(e for e in entries if e["nodeName"] == node)["score"] == best

    # The second pod's filter, then the first pod's bind changes the state before the
    # second pod's prioritize, which still scores from its own filter's answer; the second
    # bind reserves anew, so the two pods never get the same device.
    second_fits = await _filter(shim, second, nodes)
    assert await _bind(shim, first, node) == ""
    bind_review = next(s for s, _ in recording.reviews if s.get("reserve"))
    assert "answer" not in bind_review  # bind asks for the allocation
    asked = len(recording.reviews)
    second_node = await _prioritize(shim, second, second_fits)
    assert len(recording.reviews) == asked
    assert await _bind(shim, second, second_node) == ""

    pod = cluster.client().get(f"/api/v1/namespaces/{NS}/pods/{first['metadata']['name']}")
    assert pod.json()["spec"]["nodeName"] == node
    _, pool, _ = _allocated(cluster, first)
    assert pool == node  # the examples' node-local pools are named after their nodes
    assert _allocated(cluster, second) != _allocated(cluster, first)


async def test_bind_takes_the_pod_from_its_filter_and_a_repeated_bind_changes_nothing(
    cluster: ServerProcess, shim: httpx.AsyncClient, recording: Recording
) -> None:
    """As kube-scheduler binds from its cache: the pod the filter was given is the one bound,
    not read again. Bound since (a repeated bind, or one to another node), the binding's
    conflict tells, and the claim stays as the first bind wrote it."""
    nodes = _nodes(cluster)
    pod = _pod(cluster)
    path = f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}"
    claim = pod["spec"]["resourceClaims"][0]["resourceClaimName"]
    claim_path = f"/apis/{GROUP}/v1/namespaces/{NS}/resourceclaims/{claim}"
    fits = await _filter(shim, pod, nodes)
    node = await _prioritize(shim, pod, fits)
    began = len(recording.requests)
    assert await _bind(shim, pod, node) == ""
    # Neither the pod nor its claim is read: the filter read the claim unallocated, and
    # the status write is pinned to the version the reserving review read.
    assert ("GET", path) not in recording.requests[began:]
    assert ("GET", claim_path) not in recording.requests[began:]
    assert ("PUT", f"{claim_path}/status") in recording.requests[began:]
    assert ("POST", f"{path}/binding") in recording.requests[began:]
    written = cluster.client().get(claim_path).json()["status"]

    # kube-scheduler's retry of a bind whose answer it did not get, then a bind elsewhere.
    assert await _bind(shim, pod, node) == ""
    other = next(n for n in nodes if n != node)
    assert await _bind(shim, pod, other) != ""
    stored = cluster.client().get(path).json()
    assert stored["spec"]["nodeName"] == node
    status = cluster.client().get(claim_path).json()["status"]
    assert status["allocation"] == written["allocation"]
    assert [u["uid"] for u in status["reservedFor"]] == [pod["metadata"]["uid"]]


async def test_a_claim_changed_after_the_reserving_review_is_read_again_and_written(
    cluster: ServerProcess, shim: httpx.AsyncClient, recording: Recording
) -> None:
    """The status write pinned to the reserving review's reading of the claim meets a
    conflict when the claim changed since; the claim is then read, and the write keeps
    the change."""
    nodes = _nodes(cluster)
    pod = _pod(cluster)
    claim = pod["spec"]["resourceClaims"][0]["resourceClaimName"]
    claim_path = f"/apis/{GROUP}/v1/namespaces/{NS}/resourceclaims/{claim}"

    def label_the_claim() -> None:
        recording.after_reserving = None
        changed = cluster.client().patch(
            claim_path,
            content=orjson.dumps({"metadata": {"labels": {"changed": "meanwhile"}}}),
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert changed.status_code == 200, changed.text

    node = await _prioritize(shim, pod, await _filter(shim, pod, nodes))
    recording.after_reserving = label_the_claim
    began = len(recording.requests)
    assert await _bind(shim, pod, node) == ""
    made = recording.requests[began:]
    assert made.count(("PUT", f"{claim_path}/status")) == 2  # the conflict, then the write
    assert made.count(("GET", claim_path)) == 1
    stored = cluster.client().get(claim_path).json()
    assert stored["metadata"]["labels"] == {"changed": "meanwhile"}
    assert [u["uid"] for u in stored["status"]["reservedFor"]] == [pod["metadata"]["uid"]]
    assert _allocated(cluster, pod)[1] == node


async def test_a_claim_two_pods_share_is_allocated_once_and_reserved_for_both(
    cluster: ServerProcess, shim: httpx.AsyncClient, recording: Recording
) -> None:
    """Both filters read the shared claim unallocated; the first bind allocates it, and the
    second's reserving review reads it allocated: that bind holds nothing, reads the claim
    and only adds its pod to reservedFor."""
    nodes = _nodes(cluster)
    first, claim = create_pod_with_claim(cluster, GPU_REQUEST, namespace=NS)
    name = claim["metadata"]["name"]
    with cluster.client() as client:
        made = client.post(
            f"/api/v1/namespaces/{NS}/pods",
            json=pod_object(unique("pod"), name, ref=GPU_REQUEST["name"], namespace=NS),
        )
        assert made.status_code == 201, made.text
    second = made.json()
    first_fits = await _filter(shim, first, nodes)
    second_fits = await _filter(shim, second, nodes)
    node = await _prioritize(shim, first, first_fits)
    assert node in second_fits
    assert await _bind(shim, first, node) == ""
    written = cluster.client().get(f"/apis/{GROUP}/v1/namespaces/{NS}/resourceclaims/{name}")
    allocation = written.json()["status"]["allocation"]

    began = len(recording.reviews)
    assert await _bind(shim, second, node) == ""
    [(spec, answered)] = recording.reviews[began:]
    assert spec["reserve"]
    assert "reservation" not in orjson.loads(answered)["status"]  # nothing left to hold
    status = cluster.client().get(f"/apis/{GROUP}/v1/namespaces/{NS}/resourceclaims/{name}")
    assert status.json()["status"]["allocation"] == allocation
    users = [u["uid"] for u in status.json()["status"]["reservedFor"]]
    assert users == [first["metadata"]["uid"], second["metadata"]["uid"]]


async def test_many_pods_at_once_over_rounds_never_share_a_device(
    cluster: ServerProcess, shim: httpx.AsyncClient
) -> None:
    nodes = _nodes(cluster)

    async def place(pod: dict[str, Any]) -> None:
        for _ in range(6):  # a bind that lost its device to another is retried, as upstream
            fits = await _filter(shim, pod, nodes)
            if fits and await _bind(shim, pod, await _prioritize(shim, pod, fits)) == "":
                return
        raise AssertionError(f"pod {pod['metadata']['name']} was never bound")

    placed: list[dict[str, Any]] = []
    for _ in range(2):
        pods = [_pod(cluster) for _ in range(4)]
        await asyncio.gather(*(place(p) for p in pods))
        placed += pods
    devices = [_allocated(cluster, p) for p in placed]
    assert len(set(devices)) == len(devices)


def test_an_allocations_answer_lists_the_devices_to_attach(cluster: ServerProcess) -> None:
    """Of two fabric devices chosen, the one not attached yet is in ``needsAttaching`` (what
    bind waits for); the attached one and a Scores answer list nothing."""
    driver = f"{unique('fabric')}.example.com"
    version = {"apiVersion": "resource.k8s.io/v1"}
    objects = [
        {
            **version,
            "kind": "DeviceClass",
            "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        },
        {
            **version,
            "kind": "ResourceSlice",
            "metadata": {"name": driver},
            "spec": {
                "driver": driver,
                "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1},
                "allNodes": True,
                "devices": [
                    {"name": "detached", "attributes": {NEEDS_ATTACHING: {"bool": True}}},
                    {"name": "attached", "attributes": {NEEDS_ATTACHING: {"bool": False}}},
                ],
            },
        },
    ]
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    request = {"name": "dev", "exactly": {"deviceClassName": driver, "count": 2}}
    spec = {
        "claims": [{"name": "two", "spec": {"devices": {"requests": [request]}}}],
        "nodeNames": _nodes(cluster)[:1],
    }
    [entry] = _review(cluster, spec)["status"]["nodes"]
    assert entry["feasible"], entry
    results = entry["allocations"][0]["devices"]["results"]
    assert sorted(r["device"] for r in results) == ["attached", "detached"]
    assert entry["needsAttaching"] == [{"driver": driver, "pool": "fabric", "device": "detached"}]
    [scores] = _review(cluster, {**spec, "answer": "Scores"})["status"]["nodes"]
    assert scores["feasible"]
    assert "needsAttaching" not in scores

"""The shim's bind against the real server: claims, pods, the device view, watches and
``pods/binding`` are the server's; the AllocationReview answers are played by a small
in-process stand-in (the allocation service is not part of this test), so that which
device is chosen is the test's.

Node-local device → claim allocated, reserved for the pod, pod bound. Fabric device → the
device is listed in ``status.devices`` as needing attaching; a test controller sets
``is-attached`` → bound, or ``attach-failed`` → the bind fails and the claim is left
unallocated; no answer within the attach timeout → the same. An infeasible node fails the
bind with the review's reasons and writes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from apiserver.api.resource import NEEDS_ATTACHING
from apiserver.kubeclient import KubeClient, load_kubeconfig
from apiserver.shim.binding import Binder
from apiserver.shim.extender import BindArgs
from apiserver.shim.paths import Paths
from devtools.waiting import eventually

from .harness import ServerProcess
from .objects import create_pod_with_claim, unique

NS = "default"


class ReviewStandIn(httpx.AsyncBaseTransport):
    """AllocationReviews answered with ``choice`` (a device per claim, or None for an
    infeasible node); every other request goes to the real server."""

    def __init__(self, server: httpx.AsyncBaseTransport) -> None:
        self.server = server
        self.choice: dict[str, tuple[str, str, str]] | None = None
        self.fabric: set[tuple[str, str, str]] = set()
        """Devices the answer lists in ``needsAttaching``, as the server lists fabric ones."""
        self.reviews: list[dict[str, Any]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not request.url.path.endswith("/allocationreviews"):
            return await self.server.handle_async_request(request)
        body = orjson.loads(request.content)
        self.reviews.append(body)
        node = body["spec"]["nodeNames"][0]
        if self.choice is None:
            reason = {"claim": "x", "reason": "NoCandidates", "message": "no device matches"}
            entry: dict[str, Any] = {"nodeName": node, "feasible": False, "reasons": [reason]}
        else:
            allocations, attach = [], []
            for claim in body["spec"]["claims"]:
                driver, pool, device = self.choice[claim["name"]]
                result = {"request": "gpu", "driver": driver, "pool": pool, "device": device}
                allocations.append({"devices": {"results": [result]}})
                if (driver, pool, device) in self.fabric:
                    attach.append({"driver": driver, "pool": pool, "device": device})
            entry = {"nodeName": node, "feasible": True, "score": 100, "allocations": allocations}
            if attach:
                entry["needsAttaching"] = attach
        body["status"] = {"nodes": [entry]}
        if body["spec"].get("reserve") and self.choice is not None:
            body["status"]["reservation"] = {
                "name": unique("held"),
                "nodeName": node,
                "expirationTime": "2030-01-01T00:00:00Z",
            }
        return httpx.Response(201, json=body)


@pytest.fixture
async def stand_in(
    server: ServerProcess, devices: dict[str, tuple[str, str, str]]
) -> AsyncIterator[ReviewStandIn]:
    transport = httpx.AsyncHTTPTransport(verify=server.ssl_context())
    stand_in = ReviewStandIn(transport)
    stand_in.fabric = {d for name, d in devices.items() if name.startswith("fabric")}
    yield stand_in
    await transport.aclose()


@pytest.fixture
async def api(server: ServerProcess, stand_in: ReviewStandIn) -> AsyncIterator[KubeClient]:
    client = KubeClient(load_kubeconfig(server.kubeconfig), transport=stand_in)
    yield client
    await client.aclose()


@pytest.fixture(scope="module")
def devices(server: ServerProcess) -> dict[str, tuple[str, str, str]]:
    """A node-local GPU on node-a and a fabric GPU any node can attach."""
    local_pool, fabric_pool = unique("node-a-gpus"), unique("fabric")
    slices = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": local_pool},
            "spec": {
                "driver": "gpu.example.com",
                "pool": {"name": local_pool, "generation": 1, "resourceSliceCount": 1},
                "nodeName": "node-a",
                "devices": [{"name": "gpu-0"}],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": fabric_pool},
            "spec": {
                "driver": "gpu.example.com",
                "pool": {"name": fabric_pool, "generation": 1, "resourceSliceCount": 1},
                "allNodes": True,
                "devices": [
                    {"name": f"fab-{i}", "attributes": {NEEDS_ATTACHING: {"bool": True}}}
                    for i in range(5)
                ],
            },
        },
    ]
    with server.client() as client:
        for s in slices:
            answer = client.post("/apis/resource.k8s.io/v1/resourceslices", json=s)
            assert answer.status_code == 201, answer.text
    return {
        "local": ("gpu.example.com", local_pool, "gpu-0"),
        **{f"fabric-{i}": ("gpu.example.com", fabric_pool, f"fab-{i}") for i in range(5)},
    }


def _pod_with_claim(server: ServerProcess) -> tuple[str, str, str]:
    """A claim and a pod using it: (pod name, pod uid, claim name)."""
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}
    pod, claim = create_pod_with_claim(server, request, namespace=NS)
    return pod["metadata"]["name"], pod["metadata"]["uid"], claim["metadata"]["name"]


def _claim_path(claim: str) -> str:
    return Paths.claim(NS, claim)


async def _set_condition(api: KubeClient, claim: str, condition: str) -> None:
    current = await api.get(_claim_path(claim))
    for entry in current["status"]["devices"]:
        entry["conditions"].append(
            {
                "type": condition,
                "status": "True",
                "lastTransitionTime": "2026-11-24T06:00:00Z",
                "reason": "TestController",
                "message": "set by the test's composable controller",
            }
        )
    await api.update(f"{_claim_path(claim)}/status", current)


async def _needs_attaching(api: KubeClient, claim: str) -> dict[str, Any] | None:
    """The claim's one device status entry, once the bind asked for it to be attached."""
    devices = (await api.get(_claim_path(claim))).get("status", {}).get("devices") or []
    types = {c["type"] for d in devices for c in d.get("conditions") or []}
    return devices[0] if NEEDS_ATTACHING in types else None


async def _claim_status(api: KubeClient, claim: str) -> dict[str, Any]:
    status: dict[str, Any] = (await api.get(_claim_path(claim))).get("status") or {}
    return status


async def _bind_ended_while_waiting(
    api: KubeClient, pod: str, uid: str, claim: str, node: str
) -> None:
    """A bind to ``node`` that ends while it waits for the attach (as when the shim
    restarts): the attach request stays in the claim."""
    first = asyncio.create_task(Binder(api, Paths()).bind(BindArgs(pod, NS, uid, node)))
    await eventually(lambda: _needs_attaching(api, claim), "the attach request")
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_node_local_device_allocates_and_binds(
    server: ServerProcess,
    api: KubeClient,
    stand_in: ReviewStandIn,
    devices: dict[str, tuple[str, str, str]],
) -> None:
    pod, uid, claim = _pod_with_claim(server)
    stand_in.choice = {claim: devices["local"]}

    error = await Binder(api, Paths()).bind(BindArgs(pod, NS, uid, "node-a"))

    assert error == ""
    assert stand_in.reviews[-1]["spec"]["reserve"] is True
    assert stand_in.reviews[-1]["spec"]["nodeNames"] == ["node-a"]
    status = (await api.get(_claim_path(claim)))["status"]
    result = status["allocation"]["devices"]["results"][0]
    assert (result["driver"], result["pool"], result["device"]) == devices["local"]
    assert status["reservedFor"] == [{"resource": "pods", "name": pod, "uid": uid}]
    assert "devices" not in status  # nothing to attach
    assert (await api.get(Paths.pod(NS, pod)))["spec"]["nodeName"] == "node-a"


async def test_fabric_device_binds_once_attached(
    server: ServerProcess,
    api: KubeClient,
    stand_in: ReviewStandIn,
    devices: dict[str, tuple[str, str, str]],
) -> None:
    pod, uid, claim = _pod_with_claim(server)
    stand_in.choice = {claim: devices["fabric-0"]}
    binding = asyncio.create_task(Binder(api, Paths()).bind(BindArgs(pod, NS, uid, "node-b")))

    entry = await eventually(lambda: _needs_attaching(api, claim), "the attach request")
    assert entry["nodeName"] == "node-b"
    assert (entry["driver"], entry["pool"], entry["device"]) == devices["fabric-0"]
    assert "nodeName" not in (await api.get(Paths.pod(NS, pod)))["spec"]  # not before attach
    assert not binding.done()

    await _set_condition(api, claim, "kubernetes.io/is-attached")

    assert await asyncio.wait_for(binding, 30) == ""
    assert (await api.get(Paths.pod(NS, pod)))["spec"]["nodeName"] == "node-b"
    status = (await api.get(_claim_path(claim)))["status"]
    assert status["allocation"]["devices"]["results"][0]["device"] == "fab-0"
    assert status["reservedFor"][0]["uid"] == uid


async def test_attach_failure_fails_the_bind_and_clears_the_claim(
    server: ServerProcess,
    api: KubeClient,
    stand_in: ReviewStandIn,
    devices: dict[str, tuple[str, str, str]],
) -> None:
    pod, uid, claim = _pod_with_claim(server)
    stand_in.choice = {claim: devices["fabric-1"]}
    binding = asyncio.create_task(Binder(api, Paths()).bind(BindArgs(pod, NS, uid, "node-b")))
    await eventually(lambda: _needs_attaching(api, claim), "the attach request")

    await _set_condition(api, claim, "kubernetes.io/attach-failed")

    error = await asyncio.wait_for(binding, 30)
    assert "kubernetes.io/attach-failed" in error
    assert "fab-1" in error
    status = await _claim_status(api, claim)
    assert "allocation" not in status
    assert "reservedFor" not in status
    assert "devices" not in status
    assert "nodeName" not in (await api.get(Paths.pod(NS, pod)))["spec"]


async def test_attach_timeout_fails_the_bind_and_clears_the_claim(
    server: ServerProcess,
    api: KubeClient,
    stand_in: ReviewStandIn,
    devices: dict[str, tuple[str, str, str]],
) -> None:
    pod, uid, claim = _pod_with_claim(server)
    stand_in.choice = {claim: devices["fabric-2"]}

    error = await Binder(api, Paths(), attach_timeout=0.5).bind(BindArgs(pod, NS, uid, "node-b"))

    assert error.startswith("timed out after 0.5 s waiting for")
    assert "allocation" not in await _claim_status(api, claim)
    assert "nodeName" not in (await api.get(Paths.pod(NS, pod)))["spec"]


async def test_infeasible_node_fails_the_bind_and_writes_nothing(
    server: ServerProcess, api: KubeClient, stand_in: ReviewStandIn
) -> None:
    pod, uid, claim = _pod_with_claim(server)
    before = await api.get(_claim_path(claim))
    stand_in.choice = None

    error = await Binder(api, Paths()).bind(BindArgs(pod, NS, uid, "node-z"))

    assert "cannot be allocated on node node-z" in error
    assert "NoCandidates" in error
    after = await api.get(_claim_path(claim))
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "nodeName" not in (await api.get(Paths.pod(NS, pod)))["spec"]


async def test_a_replaced_pod_is_not_bound(server: ServerProcess, api: KubeClient) -> None:
    pod, _, _ = _pod_with_claim(server)
    error = await Binder(api, Paths()).bind(BindArgs(pod, NS, "another-uid", "node-a"))
    assert "not another-uid" in error


async def test_a_retried_bind_honours_the_attach_state_in_the_claim(
    server: ServerProcess,
    api: KubeClient,
    stand_in: ReviewStandIn,
    devices: dict[str, tuple[str, str, str]],
) -> None:
    """The first bind ends while waiting (as when the shim restarts) and the attach then
    fails; the scheduler's next bind finds the claim allocated with the attach requested,
    reads the failure from the claim, fails, and leaves the claim unallocated."""
    pod, uid, claim = _pod_with_claim(server)
    stand_in.choice = {claim: devices["fabric-3"]}
    await _bind_ended_while_waiting(api, pod, uid, claim, "node-c")
    reviews = len(stand_in.reviews)
    await _set_condition(api, claim, "kubernetes.io/attach-failed")

    error = await Binder(api, Paths()).bind(BindArgs(pod, NS, uid, "node-c"))

    assert "kubernetes.io/attach-failed" in error
    assert len(stand_in.reviews) == reviews  # allocated already: nothing to review
    status = await _claim_status(api, claim)
    assert "allocation" not in status
    assert "reservedFor" not in status
    assert "nodeName" not in (await api.get(Paths.pod(NS, pod)))["spec"]


async def test_a_retried_bind_elsewhere_leaves_a_device_being_attached_alone(
    server: ServerProcess,
    api: KubeClient,
    stand_in: ReviewStandIn,
    devices: dict[str, tuple[str, str, str]],
) -> None:
    """The first bind ends while its device is being attached to node-c (the shim
    restarted); the scheduler's retry may pick another node the claim fits. That bind fails
    without touching the claim, and the one to node-c binds once the device is attached."""
    pod, uid, claim = _pod_with_claim(server)
    stand_in.choice = {claim: devices["fabric-4"]}
    await _bind_ended_while_waiting(api, pod, uid, claim, "node-c")
    before = await api.get(_claim_path(claim))

    error = await Binder(api, Paths()).bind(BindArgs(pod, NS, uid, "node-d"))

    assert "is attached or being attached to node node-c" in error
    assert "fab-4" in error
    after = await api.get(_claim_path(claim))
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "nodeName" not in (await api.get(Paths.pod(NS, pod)))["spec"]

    await _set_condition(api, claim, "kubernetes.io/is-attached")
    assert await Binder(api, Paths()).bind(BindArgs(pod, NS, uid, "node-c")) == ""
    assert (await api.get(Paths.pod(NS, pod)))["spec"]["nodeName"] == "node-c"
    assert (await api.get(_claim_path(claim)))["status"]["reservedFor"][0]["uid"] == uid

"""The KEP-5007 attach flow with every part a real process over HTTPS: the server, the
scheduler shim, the stand-in scheduler (``python -m apiserver schedule``) and the example
composable controller (examples/composable-controller).

A pod whose claim only a fabric device fits is bound once the controller attached the
device; an attach that fails on node-a sends the pod to node-b; with no controller the
attach times out and the claim is cleared; a shim killed and started again during the
wait still binds the pod where the device was attached; a node-local device wins over a
fabric one.

Nodes node-a, node-b and node-c are equally good for a fabric device: the scheduler takes
them in name order, one further per attempt, so a pod's first try is node-a.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from apiserver.api.resource import NEEDS_ATTACHING
from apiserver.toolkit import JSON
from devtools.waiting import wait_for

from .claim_history import IS_ATTACHED, cleared, conditions, failed_on, history, then, waiting_on
from .harness import (
    REPO,
    ControllerProcess,
    SchedulerProcess,
    ServerProcess,
    ShimProcess,
    start_server,
    start_shim,
)
from .objects import create_pod_with_claim

NS = "default"
NODES = ("node-a", "node-b", "node-c")
OK, FLAKY, ORPHAN, RESTART = (
    "ok.example.com",
    "flaky.example.com",
    "orphan.example.com",
    "restart.example.com",
)
ATTACH_TIMEOUT = "6"
LATENCY = "0.2"
OWN = "composable.example.com"
"""The example controller's default driver, which its manifests use."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = start_server(tmp_path_factory.mktemp("fabric"), ["--bookmark-interval", "1"])
    objects = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}} for n in NODES] + [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        }
        for driver in (OK, FLAKY, ORPHAN, RESTART)
    ]
    proc.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def shim(server: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShimProcess]:
    proc = start_shim(
        server, tmp_path_factory.mktemp("fabricshim"), ["--attach-timeout", ATTACH_TIMEOUT]
    )
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def scheduler(shim: ShimProcess) -> Iterator[SchedulerProcess]:
    args = ["--initial-backoff", "0.2", "--max-backoff", "1"]
    proc = SchedulerProcess(shim, shim.workdir, args).start()
    yield proc
    proc.stop()


def _controller(server: ServerProcess, driver: str, *args: str) -> ControllerProcess:
    log = server.workdir / f"controller-{driver}.log"
    return ControllerProcess(server, log, ["--driver", driver, "--attach-latency", LATENCY, *args])


@pytest.fixture(scope="module")
def controllers(server: ServerProcess, scheduler: SchedulerProcess) -> Iterator[None]:
    """Attaching always works for ok.example.com; for flaky.example.com it fails on node-a."""
    started = [
        _controller(server, OK, "--model", "attach=2", "--model", "local=2").start(),
        _controller(server, FLAKY, "--model", "flaky=2", "--fail-node", "node-a").start(),
    ]
    yield
    for proc in started:
        proc.stop()


# -- helpers -------------------------------------------------------------------------------


def _get(server: ServerProcess, path: str) -> JSON:
    with server.client() as client:
        answer = client.get(path)
    assert answer.status_code == 200, answer.text
    found: JSON = answer.json()
    return found


def _claim(server: ServerProcess, name: str) -> JSON:
    return _get(server, f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims/{name}")


def _pod(server: ServerProcess, name: str) -> JSON:
    return _get(server, f"/api/v1/namespaces/{NS}/pods/{name}")


def _slice(server: ServerProcess, name: str) -> JSON:
    return _get(server, f"/apis/resource.k8s.io/v1/resourceslices/{name}")


def _pod_with_claim(server: ServerProcess, driver: str, model: str) -> tuple[str, str, str]:
    """A claim for one device of ``model`` and a pod for the stand-in scheduler using it:
    (pod name, claim name, the claim's first resourceVersion)."""
    selector = f'device.attributes["{driver}"].model == "{model}"'
    request = {
        "name": "dev",
        "exactly": {"deviceClassName": driver, "selectors": [{"cel": {"expression": selector}}]},
    }
    pod, claim = create_pod_with_claim(
        server, request, namespace=NS, schedulerName="dra-extension-scheduler"
    )
    meta = claim["metadata"]
    return pod["metadata"]["name"], meta["name"], meta["resourceVersion"]


def _events(server: ServerProcess, kind: str, name: str) -> dict[str, JSON]:
    """The Events about one object, by reason."""
    selector = f"involvedObject.kind={kind},involvedObject.name={name}"
    items = _get(server, f"/api/v1/namespaces/{NS}/events?fieldSelector={selector}")["items"]
    return {e["reason"]: e for e in items}


def _bound(server: ServerProcess, pod: str) -> str:
    node: str = wait_for(
        lambda: _pod(server, pod)["spec"].get("nodeName"), f"pod {pod} to be bound", timeout=60
    )
    return node


# -- the flow ------------------------------------------------------------------------------


@pytest.mark.usefixtures("controllers")
def test_a_claim_only_a_fabric_device_fits_is_attached_then_bound(server: ServerProcess) -> None:
    pod, claim, since = _pod_with_claim(server, OK, "attach")

    node = _bound(server, pod)

    assert node == "node-a"  # the first of three equally good nodes
    status = _claim(server, claim)["status"]
    result = status["allocation"]["devices"]["results"][0]
    assert (result["driver"], result["pool"]) == (OK, "fabric-attach")
    [entry] = status["devices"]
    assert entry["nodeName"] == node
    assert conditions(entry) == {NEEDS_ATTACHING: "True", IS_ATTACHED: "True"}
    assert [r["name"] for r in status["reservedFor"]] == [pod]
    # The shim waited: the claim was allocated and asked for the attach before it was done.
    history(server, NS, claim, since, then(waiting_on(node)))

    def moved() -> JSON | None:
        local = _get(server, "/apis/resource.k8s.io/v1/resourceslices")["items"]
        mine = [s for s in local if s["metadata"]["name"] == f"{OK}-{node}"]
        return mine[0] if mine else None

    node_slice = wait_for(moved, "the device in the node's pool")
    [device] = node_slice["spec"]["devices"]
    assert device["name"] == result["device"]
    assert device["attributes"][NEEDS_ATTACHING] == {"bool": False}
    assert device["taints"][0]["value"] == _claim(server, claim)["metadata"]["uid"]
    fabric = _slice(server, f"{OK}-fabric-attach")["spec"]
    assert result["device"] not in [d["name"] for d in fabric["devices"]]
    assert fabric["pool"]["generation"] >= 2


@pytest.mark.usefixtures("controllers")
def test_an_attach_failing_on_node_a_lands_the_pod_on_node_b(server: ServerProcess) -> None:
    pod, claim, since = _pod_with_claim(server, FLAKY, "flaky")

    node = _bound(server, pod)

    assert node == "node-b"
    status = _claim(server, claim)["status"]
    [entry] = status["devices"]  # node-a's entry went with its allocation
    assert entry["nodeName"] == "node-b"
    assert conditions(entry)[IS_ATTACHED] == "True"
    assert [r["name"] for r in status["reservedFor"]] == [pod]

    history(
        server,
        NS,
        claim,
        since,
        then(waiting_on("node-a"), failed_on("node-a"), cleared, waiting_on("node-b")),
    )
    # The shim told it on the pod and the claim: two waits, one failure (on node-a).
    for kind, name in (("Pod", pod), ("ResourceClaim", claim)):
        told = _events(server, kind, name)
        assert "node-b" in told["WaitingForAttach"]["message"]  # the latest wait
        assert told["WaitingForAttach"]["count"] == 2
        assert told["WaitingForAttach"]["type"] == "Normal"
        assert told["AttachFailed"]["type"] == "Warning"
        assert told["AttachFailed"]["source"]["component"] == "dra-scheduler-shim"


@pytest.mark.usefixtures("scheduler")
def test_without_a_controller_the_attach_times_out_and_the_claim_is_cleared(
    server: ServerProcess, scheduler: SchedulerProcess
) -> None:
    fabric = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "orphan-fabric"},
        "spec": {
            "driver": ORPHAN,
            "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1},
            "allNodes": True,
            "devices": [
                {
                    "name": "dev-0",
                    "attributes": {"model": {"string": "m"}, NEEDS_ATTACHING: {"bool": True}},
                }
            ],
        },
    }
    server.kubectl("apply", "-f", "-", input=yaml.safe_dump(fabric))
    pod, claim, since = _pod_with_claim(server, ORPHAN, "m")

    wait_for(
        lambda: (
            f"pod {NS}/{pod}: binding to node-a failed: bind: timed out after"
            in scheduler.process.output()
        ),
        "the scheduler to report the attach timeout",
        timeout=60,
    )

    seen = history(server, NS, claim, since, then(waiting_on("node-a"), cleared))
    assert cleared(seen[-1])
    assert "nodeName" not in _pod(server, pod)["spec"]
    timeout = _events(server, "Pod", pod)["AttachTimeout"]
    assert timeout["type"] == "Warning"
    assert "timed out after" in timeout["message"]
    assert "AttachTimeout" in _events(server, "ResourceClaim", claim)
    server.kubectl("delete", "pod", pod, "--wait=false")


@pytest.mark.usefixtures("scheduler")
def test_a_shim_restarted_during_the_attach_wait_still_binds_the_pod(
    server: ServerProcess, shim: ShimProcess, scheduler: SchedulerProcess
) -> None:
    controller = _controller(server, RESTART, "--model", "r=2")
    controller.start()  # publishes the fabric pool
    controller.stop()
    pod, claim, _ = _pod_with_claim(server, RESTART, "r")
    wait_for(
        lambda: waiting_on("node-a")(_claim(server, claim).get("status") or {}),
        "the attach request",
    )

    shim.process.kill()
    shim.start()
    controller.start()
    try:
        node = _bound(server, pod)
    finally:
        controller.stop()

    status = _claim(server, claim)["status"]
    [entry] = status["devices"]
    assert entry["nodeName"] == node
    assert conditions(entry)[IS_ATTACHED] == "True"
    assert [r["name"] for r in status["reservedFor"]] == [pod]
    # The bind in flight when the shim went away failed, and the scheduler tried again.
    assert f"pod {NS}/{pod}: binding to node-a failed" in scheduler.process.output()


@pytest.mark.usefixtures("controllers")
def test_a_node_local_device_is_preferred_to_a_fabric_one(server: ServerProcess) -> None:
    local = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "node-c-local"},
        "spec": {
            "driver": OK,
            "pool": {"name": "node-c-local", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "node-c",
            "devices": [{"name": "local-0", "attributes": {"model": {"string": "local"}}}],
        },
    }
    server.kubectl("apply", "-f", "-", input=yaml.safe_dump(local))
    pod, claim, _ = _pod_with_claim(server, OK, "local")

    assert _bound(server, pod) == "node-c"

    status = _claim(server, claim)["status"]
    result = status["allocation"]["devices"]["results"][0]
    assert (result["pool"], result["device"]) == ("node-c-local", "local-0")
    assert "devices" not in status  # nothing to attach
    fabric = _slice(server, f"{OK}-fabric-local")["spec"]["devices"]
    assert len(fabric) == 2  # both fabric devices still free


@pytest.mark.usefixtures("scheduler")
def test_the_example_manifests_run_the_flow_and_a_released_device_is_free_again(
    server: ServerProcess,
) -> None:
    """examples/composable-controller as its README runs it (default driver and model)."""
    controller = ControllerProcess(
        server, server.workdir / "controller-example.log", ["--attach-latency", LATENCY]
    ).start()
    try:
        example = REPO / "examples" / "composable-controller"
        server.kubectl("apply", "-f", str(example / "deviceclass.yaml"))
        server.kubectl("apply", "-f", str(example / "pod.yaml"))
        node = _bound(server, "fpga-job")
        device = _claim(server, "fpga")["status"]["allocation"]["devices"]["results"][0]["device"]

        def in_node_pool() -> JSON:
            """The device in the node's pool ({} until it is there)."""
            with server.client() as client:
                answer = client.get(f"/apis/resource.k8s.io/v1/resourceslices/{OWN}-{node}")
            devices = answer.json()["spec"]["devices"] if answer.status_code == 200 else []
            return next((d for d in devices if d["name"] == device), {})

        assert wait_for(in_node_pool, "the device in the node's pool").get("taints")

        server.kubectl("delete", "pod", "fpga-job")
        server.kubectl("delete", "resourceclaim", "fpga")

        wait_for(lambda: "taints" not in in_node_pool(), "the device to be untainted")
        assert in_node_pool()["attributes"][NEEDS_ATTACHING] == {"bool": False}  # still attached
    finally:
        controller.stop()

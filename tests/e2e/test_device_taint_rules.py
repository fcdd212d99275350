"""DeviceTaintRule end to end with kubectl, standalone: a rule selecting node-4's gpu-3 puts its
taint on the computed Device, the ResourcePool counts the GPU unavailable, a
ResourcePoolStatusRequest says the same, and an AllocationReview for every GPU of node-4
is infeasible while one for the untainted three avoids gpu-3; a claim that tolerates the
taint may have it; deleting the rule gives the GPU back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from .harness import REPO, ServerProcess, start_server
from .objects import pool_status
from .test_device_view import wait_for

DEVICE = "node-4-gpu.example.com.gpu-3"
POOL = "gpu.example.com.node-4"
TAINT = {"key": "example.com/maintenance", "value": "planned", "effect": "NoSchedule"}
RULE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceTaintRule",
    "metadata": {"name": "gpu-3-maintenance"},
    "spec": {
        "deviceSelector": {"driver": "gpu.example.com", "pool": "node-4", "device": "gpu-3"},
        "taint": TAINT,
    },
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ServerProcess]:
    server = start_server(tmp_path / "server", ["--pool-status"])
    try:
        for name in ("00-deviceclasses.yaml", "05-nodes.yaml", "10-node-slices.yaml"):
            server.kubectl("apply", "-f", str(REPO / "examples" / name))
        yield server
    finally:
        server.stop()


def get(server: ServerProcess, *what: str) -> dict[str, Any]:
    return dict(orjson.loads(server.kubectl("get", *what, "-o", "json").stdout))


def unavailable(server: ServerProcess) -> int:
    return int(get(server, "resourcepool", POOL)["status"]["unavailableDevices"])


def requested_counts(server: ServerProcess) -> tuple[int, int]:
    """(available, unavailable) of node-4 in a fresh ResourcePoolStatusRequest."""
    pool = pool_status(server, "gpu.example.com", "node-4")
    return pool["availableDevices"], pool["unavailableDevices"]


def review_node_4(server: ServerProcess, count: int, tolerate: bool = False) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu.example.com", "count": count}
    if tolerate:
        exactly["tolerations"] = [{"key": TAINT["key"], "operator": "Exists"}]
    spec = {
        "claims": [
            {
                "name": "gpus",
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
            }
        ],
        "nodeNames": ["node-4"],
    }
    body = {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "AllocationReview", "spec": spec}
    out = server.kubectl("create", "-f", "-", "-o", "yaml", input=yaml.safe_dump(body)).stdout
    [node] = yaml.safe_load(out)["status"]["nodes"]
    return dict(node)


def picked(node: dict[str, Any]) -> set[str]:
    [allocation] = node["allocations"]
    return {r["device"] for r in allocation["devices"]["results"]}


def test_a_rule_takes_gpu_3_out_of_service_and_back(cluster: ServerProcess) -> None:
    wait_for(lambda: get(cluster, "device", DEVICE), "the Device of gpu-3")
    assert "taints" not in get(cluster, "device", DEVICE)["spec"]
    assert wait_for(lambda: unavailable(cluster) == 0 or None, "node-4 counted")
    before_available, before_unavailable = requested_counts(cluster)
    assert before_unavailable == 0
    assert review_node_4(cluster, 4)["feasible"] is True

    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(RULE))
    stored = get(cluster, "devicetaintrule", "gpu-3-maintenance")
    assert stored["spec"]["taint"]["timeAdded"]  # set by the server
    tainted = wait_for(lambda: get(cluster, "device", DEVICE)["spec"].get("taints"), "the taint")
    assert [{k: t[k] for k in TAINT} for t in tainted] == [TAINT]
    marks = get(cluster, "device", DEVICE)["status"]["patchedBy"]
    assert [m["name"] for m in marks] == ["DeviceTaintRule/gpu-3-maintenance"]
    other = get(cluster, "device", "node-4-gpu.example.com.gpu-0")
    assert "taints" not in other["spec"]

    wait_for(lambda: unavailable(cluster) == 1 or None, "ResourcePool counting gpu-3 unavailable")
    assert requested_counts(cluster) == (before_available - 1, 1)
    assert review_node_4(cluster, 4)["feasible"] is False
    three = review_node_4(cluster, 3)
    assert three["feasible"] is True
    assert picked(three) == {"gpu-0", "gpu-1", "gpu-2"}
    tolerating = review_node_4(cluster, 4, tolerate=True)
    assert tolerating["feasible"] is True
    assert "gpu-3" in picked(tolerating)

    cluster.kubectl("delete", "devicetaintrule", "gpu-3-maintenance")
    wait_for(lambda: "taints" not in get(cluster, "device", DEVICE)["spec"], "gpu-3 untainted")
    wait_for(lambda: unavailable(cluster) == 0 or None, "gpu-3 available again")
    assert review_node_4(cluster, 4)["feasible"] is True


def test_a_bad_rule_is_refused_naming_the_field(cluster: ServerProcess) -> None:
    for spec, field in (
        ({"deviceSelector": {"pool": "a//b"}, "taint": TAINT}, "spec.deviceSelector.pool"),
        ({"deviceSelector": {}, "taint": {**TAINT, "effect": "Soon"}}, "spec.taint.effect"),
        ({"deviceSelector": {}, "taint": {"effect": "NoExecute"}}, "spec.taint.key"),
    ):
        bad = {**RULE, "spec": spec}
        done = cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(bad), check=False)
        assert done.returncode != 0
        assert field in done.stderr
    assert cluster.kubectl("get", "devicetaintrules", "-o", "name").stdout.split() == []

"""KEP-5027 taints end to end with kubectl: the demo's patch that takes node-4's gpu-3 out of
service puts a NoSchedule taint on the computed Device (with the patch that added it), and
pool status counts the GPU as unavailable until the patch is deleted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from .harness import REPO, ServerProcess, start_server
from .objects import pool_status, unique
from .test_device_view import wait_for

EXAMPLES = REPO / "examples"
PATCH_FILE = EXAMPLES / "50-slicepatch.yaml"
PATCH = "node-4-gpu-3-unhealthy"
DEVICE = "node-4-gpu.example.com.gpu-3"
TAINT = {"key": "gpu.example.com/unhealthy", "value": "true", "effect": "NoSchedule"}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ServerProcess]:
    """The demo cluster without its patch, pool status requests answered by the server."""
    server = start_server(tmp_path / "server", ["--pool-status"])
    try:
        for manifest in sorted(EXAMPLES.glob("*.yaml")):
            if manifest != PATCH_FILE:
                server.kubectl("apply", "-f", str(manifest))
        yield server
    finally:
        server.stop()


def node_4(server: ServerProcess) -> dict[str, Any]:
    """node-4's entry of a fresh ResourcePoolStatusRequest, once it is Complete."""
    return pool_status(server, "gpu.example.com", "node-4")


def device(server: ServerProcess) -> dict[str, Any]:
    return dict(orjson.loads(server.kubectl("get", "device", DEVICE, "-o", "json").stdout))


def test_the_example_patch_takes_gpu_3_out_of_service(cluster: ServerProcess) -> None:
    before = node_4(cluster)
    assert (before["totalDevices"], before["availableDevices"], before["unavailableDevices"]) == (
        4,
        4,
        0,
    )

    cluster.kubectl("apply", "-f", str(PATCH_FILE))
    tainted = wait_for(lambda: device(cluster)["spec"].get("taints"), "the taint on gpu-3")
    assert [{k: t[k] for k in TAINT} for t in tainted] == [TAINT]
    assert tainted[0]["timeAdded"]  # set by the server
    [mark] = device(cluster)["status"]["patchedBy"]
    assert mark["name"] == PATCH
    assert mark["taints"] == ["gpu.example.com/unhealthy=true:NoSchedule"]

    after = node_4(cluster)
    assert after["availableDevices"] == before["availableDevices"] - 1
    assert after["unavailableDevices"] == 1
    assert after["totalDevices"] == 4

    wide = cluster.kubectl(
        "get", "devices", "-o", "wide", "--field-selector", "spec.pool.name=node-4"
    ).stdout
    rows = {line.split()[0]: line for line in wide.splitlines()[1:]}
    assert "gpu.example.com/unhealthy:NoSchedule" in rows[DEVICE]
    assert "<none>" in rows["node-4-gpu.example.com.gpu-0"]

    cluster.kubectl("delete", "rsp", PATCH)
    wait_for(lambda: "taints" not in device(cluster)["spec"], "gpu-3 without the taint")
    assert node_4(cluster)["availableDevices"] == 4


def test_kubectl_explain_shows_patch_taints(cluster: ServerProcess) -> None:
    out = cluster.kubectl("explain", "rsp.spec.devices.taints").stdout
    assert "effect" in out
    assert "timeAdded" in out
    assert "at most 4" in out


def test_too_many_taints_are_refused_naming_the_field(cluster: ServerProcess) -> None:
    name = unique("taints")
    body = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourceSlicePatch",
        "metadata": {"name": name},
        "spec": {
            "devices": {
                "taints": [{"key": f"x.example.com/t{i}", "effect": "None"} for i in range(5)]
            }
        },
    }
    result = cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(body), check=False)
    assert result.returncode != 0
    assert "spec.devices.taints: Too many: must have at most 4 items (has 5)" in result.stderr
    assert cluster.kubectl("get", "rsp", name, check=False).returncode != 0
    body["spec"]["devices"]["taints"] = body["spec"]["devices"]["taints"][:4]
    cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(body))

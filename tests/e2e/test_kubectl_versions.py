"""One fixed suite of kubectl commands, run by every kubectl release from 1.28 to 1.37 against
the real server: api-resources, explain, get -o wide and -o yaml, client-side apply twice (the
second apply of ``examples/50-slicepatch.yaml`` crashed 1.28 while ``/openapi/v2`` wrote
fields through ``allOf``), diff, server-side apply, watch, describe, and the create of a review
with kubectl's default validation (which reads the protobuf OpenAPI v2 for a create-only kind).

The releases come from ``devtools.kubectls`` (``make test`` fetches them first). Each release
keeps its own HOME, so its discovery and OpenAPI caches are its own, and its own object names,
so the releases share one server without seeing each other's objects.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devtools.kubectls import VERSIONS, binary

from .harness import REPO, ServerProcess, start_server
from .objects import LineReader, stop

EXAMPLE = REPO / "examples" / "50-slicepatch.yaml"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server for the module, holding the example cluster a review is answered from."""
    server = start_server(tmp_path_factory.mktemp("kubectl-versions"))
    for name in ("00-deviceclasses.yaml", "05-nodes.yaml", "10-node-slices.yaml"):
        server.kubectl("apply", "-f", str(REPO / "examples" / name))
    yield server
    server.stop()


class Kubectl:
    """One kubectl release against the module's server, with a HOME of its own."""

    def __init__(self, server: ServerProcess, version: str, home: Path) -> None:
        self.server = server
        self.version = version
        self.binary = str(binary(version))
        home.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "KUBECONFIG": str(server.kubeconfig), "HOME": str(home)}

    def name(self, prefix: str) -> str:
        """An object name of this release's own."""
        return f"{prefix}-v{self.version.replace('.', '-')}"

    def __call__(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [self.binary, *args],
            input=input,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {self.version} {' '.join(args)} failed ({result.returncode}):\n"
                f"{result.stdout}\n{result.stderr}"
            )
        return result

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [self.binary, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )

    def get(self, kind: str, name: str) -> dict[str, Any]:
        got: dict[str, Any] = yaml.safe_load(self("get", kind, name, "-o", "yaml").stdout)
        return got


@pytest.fixture(params=VERSIONS, ids=[f"kubectl-{v}" for v in VERSIONS])
def kubectl(
    request: pytest.FixtureRequest,
    cluster: ServerProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> Kubectl:
    version: str = request.param
    return Kubectl(cluster, version, tmp_path_factory.getbasetemp() / f"home-{version}")


def _example(name: str, priority: int = 100) -> str:
    """examples/50-slicepatch.yaml under another name (and priority)."""
    text = EXAMPLE.read_text().replace("name: node-4-gpu-3-unhealthy", f"name: {name}")
    assert f"name: {name}" in text
    return text.replace("priority: 100", f"priority: {priority}")


def _manifest(name: str, priority: int) -> str:
    return f"""apiVersion: resource.k8s.io/v1alpha3
kind: ResourceSlicePatch
metadata:
  name: {name}
spec:
  devices:
    filter:
      driver: gpu.example.com
      pool: node-1
    priority: {priority}
    attributes:
      example.com/zone:
        string: a
"""


def _columns(line: str) -> list[str]:
    return line.split()


def test_the_release_is_the_version_it_is_named(kubectl: Kubectl) -> None:
    version = json.loads(kubectl("version", "--client", "-o", "json").stdout)["clientVersion"]
    assert f"{version['major']}.{version['minor'].rstrip('+')}" == kubectl.version


def test_api_resources(kubectl: Kubectl) -> None:
    """The group's kinds with their short names, scope and verbs, from discovery."""
    out = kubectl("api-resources", "--api-group", "resource.k8s.io", "-o", "wide").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert rows["resourceslicepatches"][1:5] == [
        "rsp",
        "resource.k8s.io/v1alpha3",
        "false",
        "ResourceSlicePatch",
    ]
    assert rows["resourceslicepatches"][5] == (
        "create,delete,deletecollection,get,list,patch,update,watch"
    )
    assert rows["resourcepoolstatusrequests"][1] == "rpsr"
    assert rows["allocationreviews"][-1] == "create"


def test_explain(kubectl: Kubectl) -> None:
    """The fields of a nested type and their descriptions, from the server's OpenAPI."""
    out = kubectl("explain", "rsp.spec.devices").stdout
    assert re.search(r"KIND:\s+ResourceSlicePatch", out), out
    assert re.search(r"VERSION:\s+v1alpha3", out), out
    for field in ("attributes", "capacity", "filter", "priority"):
        assert re.search(rf"\n\s+{field}\s+<", out), (field, out)
    nested = kubectl("explain", "rsp.spec.devices.filter").stdout
    for field in ("driver", "pool", "device"):
        assert re.search(rf"\n\s+{field}\s+<string>", nested), (field, nested)


def test_get_wide_and_yaml(kubectl: Kubectl) -> None:
    """The server's table columns with -o wide; the stored object with -o yaml."""
    name = kubectl.name("get")
    kubectl("create", "-f", "-", input=_manifest(name, priority=7))
    header, *rows = kubectl("get", "rsp", name, "-o", "wide").stdout.splitlines()
    assert _columns(header)[:2] == ["NAME", "DRIVER"]
    [row] = rows
    assert _columns(row)[0] == name
    assert "7" in _columns(row)
    got = kubectl.get("rsp", name)
    assert got["kind"] == "ResourceSlicePatch"
    assert got["metadata"]["name"] == name
    assert got["spec"]["devices"]["priority"] == 7
    assert got["spec"]["devices"]["filter"] == {"driver": "gpu.example.com", "pool": "node-1"}


def test_apply_twice_then_diff(kubectl: Kubectl, tmp_path: Path) -> None:
    """The example slice patch applied, then applied again (the three-way strategic diff that
    crashed 1.28), then diffed: unchanged shows nothing, a changed priority shows the change
    and stores nothing."""
    name = kubectl.name("example")
    manifest = tmp_path / "patch.yaml"
    manifest.write_text(_example(name))
    kind = "resourceslicepatch.resource.k8s.io"
    assert kubectl("apply", "-f", str(manifest)).stdout.strip() == f"{kind}/{name} created"
    first = kubectl.get("rsp", name)

    again = kubectl("apply", "-f", str(manifest)).stdout.strip()
    assert again in (f"{kind}/{name} configured", f"{kind}/{name} unchanged")
    second = kubectl.get("rsp", name)
    assert second["spec"] == first["spec"]
    assert second["metadata"]["generation"] == first["metadata"]["generation"]

    same = kubectl("diff", "-f", str(manifest), check=False)
    assert (same.returncode, same.stdout) == (0, ""), same.stderr
    manifest.write_text(_example(name, priority=101))
    changed = kubectl("diff", "-f", str(manifest), check=False)
    assert changed.returncode == 1, changed.stderr  # 1: differences found, not an error
    removed = [line for line in changed.stdout.splitlines() if line.startswith("-  ")]
    added = [line for line in changed.stdout.splitlines() if line.startswith("+  ")]
    assert any("priority: 100" in line for line in removed), changed.stdout
    assert any("priority: 101" in line for line in added), changed.stdout
    assert kubectl.get("rsp", name)["spec"]["devices"]["priority"] == 100


def test_server_side_apply(kubectl: Kubectl, tmp_path: Path) -> None:
    """--server-side: applied by the server, owned by the manager "kubectl"; a change of the
    manifest is applied the same way."""
    name = kubectl.name("ssa")
    manifest = tmp_path / "patch.yaml"
    manifest.write_text(_manifest(name, priority=3))
    out = kubectl("apply", "--server-side", "-f", str(manifest)).stdout.strip()
    assert out == f"resourceslicepatch.resource.k8s.io/{name} serverside-applied"
    manifest.write_text(_manifest(name, priority=4))
    kubectl("apply", "--server-side", "-f", str(manifest))
    got = yaml.safe_load(kubectl("get", "rsp", name, "-o", "yaml", "--show-managed-fields").stdout)
    assert got["spec"]["devices"]["priority"] == 4
    [entry] = got["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl", "Apply")
    assert "f:priority" in entry["fieldsV1"]["f:spec"]["f:devices"]


def test_watch_sees_a_change(kubectl: Kubectl) -> None:
    """`get -w` prints the current row, then a row for a change made while it watches."""
    name = kubectl.name("watch")
    kubectl("create", "-f", "-", input=_manifest(name, priority=11))
    watch = kubectl.popen("get", "rsp", name, "-w")
    try:
        assert watch.stdout is not None
        out = LineReader(watch.stdout)
        assert "11" in _columns(out.wait_for(lambda line: line.startswith(name + " ")))
        kubectl("patch", "rsp", name, "--type=merge", "-p", '{"spec":{"devices":{"priority":12}}}')
        assert "12" in _columns(out.wait_for(lambda line: line.startswith(name + " ")))
        assert watch.poll() is None
    finally:
        stop(watch)


def test_describe(kubectl: Kubectl) -> None:
    name = kubectl.name("describe")
    kubectl("create", "-f", "-", input=_manifest(name, priority=9))
    out = kubectl("describe", "rsp", name).stdout
    assert re.search(rf"^Name:\s+{name}$", out, re.MULTILINE), out
    assert re.search(r"^Kind:\s+ResourceSlicePatch$", out, re.MULTILINE), out
    assert re.search(r"Priority:\s+9$", out, re.MULTILINE), out
    assert "Events:" in out


def test_create_a_review(kubectl: Kubectl) -> None:
    """`kubectl create -f` of an AllocationReview and of a ResourcePoolStatusRequest, with
    kubectl's default validation: the review is answered from the example cluster."""
    review = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "AllocationReview",
        "spec": {
            "claims": [
                {
                    "name": "one-gpu",
                    "spec": {
                        "devices": {
                            "requests": [
                                {
                                    "name": "gpu",
                                    "exactly": {"deviceClassName": "gpu.example.com", "count": 1},
                                }
                            ]
                        }
                    },
                }
            ],
            "nodeNames": ["node-1"],
        },
    }
    answer = yaml.safe_load(
        kubectl("create", "-f", "-", "-o", "yaml", input=yaml.safe_dump(review)).stdout
    )
    [node] = answer["status"]["nodes"]
    assert node["nodeName"] == "node-1"
    assert node["feasible"] is True
    [result] = node["allocations"][0]["devices"]["results"]
    assert (result["request"], result["driver"], result["pool"]) == (
        "gpu",
        "gpu.example.com",
        "node-1",
    )

    name = kubectl.name("pools")
    request = f"""apiVersion: resource.k8s.io/v1alpha1
kind: ResourcePoolStatusRequest
metadata:
  name: {name}
spec:
  driver: gpu.example.com
"""
    out = kubectl("create", "-f", "-", input=request).stdout.strip()
    assert out == f"resourcepoolstatusrequest.resource.k8s.io/{name} created"
    assert kubectl.get("rpsr", name)["spec"]["driver"] == "gpu.example.com"

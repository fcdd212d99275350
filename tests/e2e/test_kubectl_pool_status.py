"""KEP-5677 end to end: the server's controller answers ResourcePoolStatusRequests over the
demo cluster in examples/, driven by the real kubectl.

The three user stories run as the KEP writes them, with one substitution: the KEP's driver
``example.com/gpu`` cannot publish a ResourceSlice (upstream driver names have no slash), so
the stories ask for the example cluster's ``gpu.example.com``; everything else is verbatim
(bash runs the stories' shell; ``bc`` is replaced by a stand-in only where it is not
installed) but for one fix to Story 3: kubectl's jsonpath output ends without a newline and
GNU bc ignores an unterminated last line, so as written ``AVAILABLE`` comes out empty and
the alert test fails with "integer expression expected"; the script's template gets a
trailing ``{"\n"}``. A request for ``example.com/gpu`` itself, as written, completes with no
pools.

There is no allocator yet: the module's cluster allocates claims through the claim status
subresource as the scheduler would — three GPUs on node-1 and one on node-2, the numbers of
the KEP's Story 1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from .harness import REPO, ServerProcess, kubectl_binary, start_server
from .objects import RPSR_PATH, is_status, unique, write_allocation

EXAMPLES = REPO / "examples"
DRIVER = "gpu.example.com"
OPS_TOKEN = "ops-token-for-the-rate-limit-test"
BURST = 25


def allocate(
    server: ServerProcess, claim: str, request: str, devices: list[tuple[str, str]]
) -> None:
    """What the scheduler does once it has picked devices: write the claim's allocation."""
    results = [
        {"request": request, "driver": DRIVER, "pool": pool, "device": device}
        for pool, device in devices
    ]
    write_allocation(server, claim, {"devices": {"results": results}})


def new_claim(server: ServerProcess, name: str) -> None:
    manifest = f"""apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: {name}
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
"""
    server.kubectl("create", "-f", "-", input=manifest)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The example cluster with the KEP's allocations, its requests answered by the server.
    A second user, ``ops``, is there for the rate limit (burst ``BURST``, then one a
    thousand seconds); it holds the KEP's ``pool-status-reader`` role."""
    workdir = tmp_path_factory.mktemp("pool-status")
    (workdir / "certs").mkdir()
    (workdir / "certs" / "tokens.csv").write_text(
        f'admin-token-{os.getpid()},admin,admin,"system:masters"\n{OPS_TOKEN},ops,ops\n'
    )
    server = start_server(
        workdir,
        [
            "--pool-status",
            "--pool-status-create-rate",
            "0.001",
            "--pool-status-create-burst",
            str(BURST),
        ],
    )
    try:
        server.kubectl("apply", "-f", str(EXAMPLES))
        server.kubectl(
            "create",
            "clusterrole",
            "pool-status-reader",
            "--verb=create,get,list,delete",
            "--resource=resourcepoolstatusrequests.resource.k8s.io",
        )
        server.kubectl(
            "create",
            "clusterrolebinding",
            "ops-pool-status",
            "--clusterrole=pool-status-reader",
            "--user=ops",
        )
        allocate(server, "two-gpus-same-model", "gpus", [("node-1", "gpu-0"), ("node-1", "gpu-1")])
        allocate(server, "one-gpu", "gpu", [("node-1", "gpu-2")])
        new_claim(server, "debug-gpu")
        allocate(server, "debug-gpu", "gpu", [("node-2", "gpu-3")])
        yield server
    finally:
        server.stop()


def bash(server: ServerProcess, script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run a story's shell with kubectl on the PATH, configured for ``server``."""
    tools = tmp_path / "bin"
    tools.mkdir(exist_ok=True)
    (tools / "kubectl").symlink_to(kubectl_binary())
    if shutil.which("bc") is None:
        stand_in = tools / "bc"
        stand_in.write_text(
            '#!/bin/sh\nexec python3 -c "import sys; print(eval(sys.stdin.read()))"\n'
        )
        stand_in.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}",
        "KUBECONFIG": str(server.kubeconfig),
        "HOME": str(server.workdir),
    }
    return subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def get(server: ServerProcess, name: str) -> dict[str, Any]:
    got: dict[str, Any] = yaml.safe_load(server.kubectl("get", f"rpsr/{name}", "-o", "yaml").stdout)
    return got


def ask(server: ServerProcess, name: str, **spec: Any) -> dict[str, Any]:
    """Create a request, wait for Complete, return its status."""
    body = {"driver": DRIVER, **spec}
    manifest = yaml.safe_dump(
        {
            "apiVersion": "resource.k8s.io/v1alpha1",
            "kind": "ResourcePoolStatusRequest",
            "metadata": {"name": name},
            "spec": body,
        }
    )
    server.kubectl("create", "-f", "-", input=manifest)
    server.kubectl("wait", "--for=condition=Complete", f"rpsr/{name}", "--timeout=30s")
    status: dict[str, Any] = get(server, name)["status"]
    return status


def counts(pool: dict[str, Any]) -> tuple[int, int, int, int]:
    return (
        pool["totalDevices"],
        pool["allocatedDevices"],
        pool["availableDevices"],
        pool["unavailableDevices"],
    )


def processed(server: ServerProcess) -> float:
    with server.client() as client:
        text = client.get("/metrics").text
    for line in text.splitlines():
        if line.startswith("resourcepoolstatus_requests_processed_total "):
            return float(line.split()[1])
    raise AssertionError("resourcepoolstatus_requests_processed_total is not on /metrics")


STORY_1 = """set -e
NAME=check-gpus-$(date +%s)
kubectl create -f - <<EOF
apiVersion: resource.k8s.io/v1alpha1
kind: ResourcePoolStatusRequest
metadata:
  name: $NAME
spec:
  driver: gpu.example.com
EOF
kubectl wait --for=condition=Complete rpsr/$NAME --timeout=30s
kubectl get rpsr/$NAME -o yaml > "$OUT"
kubectl delete rpsr/$NAME
"""


def test_story_1_cluster_administrator(cluster: ServerProcess, tmp_path: Path) -> None:
    """Create, wait for Complete, view as YAML, delete: every GPU pool with its counts."""
    out = tmp_path / "request.yaml"
    result = bash(cluster, f'OUT="{out}"\n{STORY_1}', tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    name = lines[0].split("/")[1].split()[0]
    assert lines == [
        f"resourcepoolstatusrequest.resource.k8s.io/{name} created",
        f"resourcepoolstatusrequest.resource.k8s.io/{name} condition met",
        f'resourcepoolstatusrequest.resource.k8s.io "{name}" deleted',
    ]
    got = yaml.safe_load(out.read_text())
    assert got["spec"] == {"driver": DRIVER, "limit": 100}
    status = got["status"]
    assert status["observationTime"]
    pools = {p["poolName"]: p for p in status["pools"]}
    assert list(pools) == ["node-1", "node-2", "node-3", "node-4", "node-5"]
    assert pools["node-1"] == {
        "driver": DRIVER,
        "poolName": "node-1",
        "nodeName": "node-1",
        "totalDevices": 4,
        "allocatedDevices": 3,
        "availableDevices": 1,
        "unavailableDevices": 0,
        "sliceCount": 1,
        "generation": 1,
    }
    assert counts(pools["node-2"]) == (4, 1, 3, 0)
    assert pools["node-5"]["totalDevices"] == 6  # the partitioned GPUs, flattened from mixins
    [condition] = status["conditions"]
    assert (condition["type"], condition["status"]) == ("Complete", "True")
    assert (condition["reason"], condition["message"]) == (
        "CalculationComplete",
        "Processed 5 pools",
    )
    assert (status["totalMatchingPools"], status["truncated"]) == (5, False)
    assert cluster.kubectl("get", f"rpsr/{name}", check=False).returncode != 0


# The KEP's one-liner as written; its `sleep 2` is the user's own wait, part of the story.
STORY_2 = """kubectl create -f - <<EOF && sleep 2 && \\
  kubectl get rpsr/debug-check -o jsonpath='{.status.pools[*]}'
apiVersion: resource.k8s.io/v1alpha1
kind: ResourcePoolStatusRequest
metadata:
  name: debug-check
spec:
  driver: gpu.example.com
EOF
"""


def test_story_2_developer_debugging(cluster: ServerProcess, tmp_path: Path) -> None:
    """The one-liner: after two seconds the pools are there, each with what it has free."""
    result = bash(cluster, STORY_2, tmp_path)
    assert result.returncode == 0, result.stderr
    created, _, pools_json = result.stdout.partition("\n")
    assert created == "resourcepoolstatusrequest.resource.k8s.io/debug-check created"
    pools = [json.loads(part) for part in pools_json.split(" ") if part]
    available = {p["nodeName"]: p["availableDevices"] for p in pools}
    assert available["node-1"] == 1
    assert available["node-2"] == 3
    cluster.kubectl("delete", "rpsr/debug-check")


STORY_3 = """#!/bin/bash
# Cron job that runs every 5 minutes

REQUEST_NAME="monitor-$(date +%s)"
DRIVER="gpu.example.com"

# Create request
kubectl create -f - <<EOF
apiVersion: resource.k8s.io/v1alpha1
kind: ResourcePoolStatusRequest
metadata:
  name: $REQUEST_NAME
spec:
  driver: $DRIVER
EOF

# Wait and get result
kubectl wait --for=condition=Complete rpsr/$REQUEST_NAME --timeout=60s
AVAILABLE=$(kubectl get rpsr/$REQUEST_NAME -o jsonpath='{.status.pools[*].availableDevices}{"\\n"}' | tr ' ' '+' | bc)

# Alert if low
if [ "$AVAILABLE" -lt 5 ]; then
  echo "ALERT: Only $AVAILABLE devices available cluster-wide"
fi

# Cleanup
kubectl delete rpsr/$REQUEST_NAME
echo "available=$AVAILABLE"
"""


def test_story_3_automation(cluster: ServerProcess, tmp_path: Path) -> None:
    """The monitoring script sums availableDevices over the pools; no alert with plenty free."""
    before = get_total_available(cluster)
    result = bash(cluster, STORY_3, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ALERT" not in result.stdout
    assert result.stdout.splitlines()[-1] == f"available={before}"
    assert " deleted" in result.stdout


def get_total_available(server: ServerProcess) -> int:
    status = ask(server, unique("total"))
    return sum(p["availableDevices"] for p in status["pools"])


def test_the_stories_verbatim_driver_completes_with_no_pools(cluster: ServerProcess) -> None:
    """``example.com/gpu`` as the KEP writes it: valid, answered, nothing matches."""
    status = ask(cluster, unique("verbatim"), driver="example.com/gpu")
    assert "pools" not in status
    assert (status["totalMatchingPools"], status["truncated"]) == (0, False)
    assert status["conditions"][0]["reason"] == "CalculationComplete"


def test_a_new_claim_moves_the_counts_of_a_new_request(cluster: ServerProcess) -> None:
    """Counters at work: allocating node-5's whole gpu-0 takes the two halves that share its
    counters with it. The earlier request keeps its answer; the server processed each once."""
    first_name = unique("node-5-before")
    counted = processed(cluster)
    before = ask(cluster, first_name, poolName="node-5")
    assert [counts(p) for p in before["pools"]] == [(6, 0, 6, 0)]
    new_claim(cluster, "whole-gpu")
    allocate(cluster, "whole-gpu", "gpu", [("node-5", "gpu-0")])
    after = ask(cluster, unique("node-5-after"), poolName="node-5")
    assert [counts(p) for p in after["pools"]] == [(6, 1, 3, 2)]
    assert get(cluster, first_name)["status"] == before
    assert processed(cluster) == counted + 2


def test_delete_and_recreate_gives_fresh_data(cluster: ServerProcess) -> None:
    name = unique("fresh")
    first = ask(cluster, name, poolName="node-3")
    uid = get(cluster, name)["metadata"]["uid"]
    assert [counts(p) for p in first["pools"]] == [(4, 0, 4, 0)]
    new_claim(cluster, "node-3-gpu")
    allocate(cluster, "node-3-gpu", "gpu", [("node-3", "gpu-1")])
    cluster.kubectl("delete", f"rpsr/{name}")
    again = ask(cluster, name, poolName="node-3")
    assert get(cluster, name)["metadata"]["uid"] != uid
    assert [counts(p) for p in again["pools"]] == [(4, 1, 3, 0)]


def test_limit_truncates(cluster: ServerProcess) -> None:
    status = ask(cluster, unique("two"), limit=2)
    assert [p["poolName"] for p in status["pools"]] == ["node-1", "node-2"]
    assert (status["truncated"], status["totalMatchingPools"]) == (True, 5)
    header = cluster.kubectl("get", "rpsr", "-o", "wide").stdout.splitlines()[0].split()
    assert "TRUNCATED" in header


def test_ttl_zero_deletes_the_request_once_complete(cluster: ServerProcess) -> None:
    name = unique("ephemeral")
    manifest = f"""apiVersion: resource.k8s.io/v1alpha1
kind: ResourcePoolStatusRequest
metadata:
  name: {name}
spec:
  driver: {DRIVER}
  ttlSecondsAfterComplete: 0
"""
    cluster.kubectl("create", "-f", "-", input=manifest)
    cluster.kubectl("wait", "--for=delete", f"rpsr/{name}", "--timeout=30s")
    assert cluster.kubectl("get", f"rpsr/{name}", check=False).returncode != 0


def test_creation_is_rate_limited_per_user(cluster: ServerProcess) -> None:
    """``ops`` gets its burst, then 429 TooManyRequests saying when to retry, which kubectl
    prints at once; the admin is not affected."""
    body = {
        "apiVersion": "resource.k8s.io/v1alpha1",
        "kind": "ResourcePoolStatusRequest",
        "spec": {"driver": DRIVER, "ttlSecondsAfterComplete": 0},
    }
    ops_client = httpx.Client(
        base_url=cluster.url,
        verify=cluster.ssl_context(),
        headers={"Authorization": f"Bearer {OPS_TOKEN}"},
        timeout=30.0,
    )
    with ops_client as ops:
        codes = [
            ops.post(RPSR_PATH, json={**body, "metadata": {"name": unique("ops")}}).status_code
            for _ in range(BURST)
        ]
        assert codes == [201] * BURST
        refused = ops.post(RPSR_PATH, json={**body, "metadata": {"name": unique("ops")}})
    assert refused.status_code == 429
    assert "Retry-After" not in refused.headers
    assert refused.json()["details"]["retryAfterSeconds"] >= 1
    assert is_status(refused.json(), 429)
    assert refused.json()["reason"] == "TooManyRequests"
    assert "ops" in refused.json()["message"]
    # kubectl shows the message at once: one POST, no silent retries, no bare EOF.
    manifest = yaml.safe_dump({**body, "metadata": {"name": unique("ops")}})
    shown = cluster.kubectl(
        "--token", OPS_TOKEN, "create", "-f", "-", "-v=6", input=manifest, check=False
    )
    assert shown.returncode != 0
    assert "Error from server (TooManyRequests)" in shown.stderr
    assert "too many resourcepoolstatusrequests created by ops" in shown.stderr
    assert shown.stderr.count('verb="POST"') == 1
    ask(cluster, unique("admin-still"), poolName="node-1")

"""examples/drivers/shared-nic.yaml end to end: a NIC whose bandwidth and queues several
claims share, applied with kubectl to a real server.

Each claim is reviewed (AllocationReview), then allocated as the scheduler would (its status
written with the review's answer), and the next review sees what the earlier shares consume.
Expectations are hand-computed from the file's numbers (its header comment says how):
eth0 has 40G and 16 queues; nic-a takes 10G and 4 queues, nic-b 16G and 1, nic-c 1G and 1;
then 13G is left on eth0 and 10G on eth1, so 14G fits nowhere and 13G fits eth0. Pool
status counts eth0 once, as allocated, and eth1 as available.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from apiserver.cel.quantity import parse
from devtools.waiting import wait_for

from .harness import REPO, ServerProcess, start_server

GROUP = "resource.k8s.io"
EXAMPLE = REPO / "examples" / "drivers" / "shared-nic.yaml"
NODES = REPO / "examples" / "05-nodes.yaml"
POOLS = f"/apis/{GROUP}/v1alpha3/resourcepools"
DRIVER = "nic.example.com"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_server(tmp_path_factory.mktemp("shared-nic"), ["--pool-status"])
    try:
        server.kubectl("apply", "-f", str(NODES))
        server.kubectl("apply", "-f", str(EXAMPLE))
        yield server
    finally:
        server.stop()


def review(server: ServerProcess, claims: list[dict[str, Any]]) -> dict[str, Any]:
    body = {
        "apiVersion": f"{GROUP}/v1alpha3",
        "kind": "AllocationReview",
        "spec": {"claims": claims, "nodeNames": ["node-1"]},
    }
    out = server.kubectl("create", "-f", "-", "-o", "yaml", input=yaml.safe_dump(body)).stdout
    [node] = yaml.safe_load(out)["status"]["nodes"]
    assert node["nodeName"] == "node-1"
    answer: dict[str, Any] = node
    return answer


def stored(name: str) -> dict[str, Any]:
    return {"namespace": "default", "name": name}


def inline(bandwidth: str) -> dict[str, Any]:
    request = {
        "name": "nic",
        "exactly": {
            "deviceClassName": DRIVER,
            "capacity": {"requests": {"bandwidth": bandwidth}},
        },
    }
    return {"name": f"wants-{bandwidth.lower()}", "spec": {"devices": {"requests": [request]}}}


def allocate(server: ServerProcess, name: str, allocation: dict[str, Any]) -> None:
    """What the scheduler does with the answer: write it as the claim's allocation."""
    server.kubectl(
        "patch",
        f"resourceclaim/{name}",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"allocation": allocation}}),
    )


def amounts(result: dict[str, Any]) -> dict[str, int]:
    return {k: parse(v).nanos for k, v in result["consumedCapacity"].items()}


def expect(bandwidth: str, queues: int) -> dict[str, int]:
    return {"bandwidth": parse(bandwidth).nanos, "queues": parse(str(queues)).nanos}


def test_three_claims_share_eth0_and_the_rest_is_what_is_left(cluster: ServerProcess) -> None:
    share_ids = []
    for name, bandwidth, queues in (("nic-a", "10G", 4), ("nic-b", "16G", 1), ("nic-c", "1G", 1)):
        answer = review(cluster, [stored(name)])
        assert answer["feasible"], answer
        [allocation] = answer["allocations"]
        [result] = allocation["devices"]["results"]
        assert (result["driver"], result["pool"], result["device"]) == (
            DRIVER,
            "node-1-nics",
            "eth0",
        )
        assert amounts(result) == expect(bandwidth, queues)
        assert str(uuid.UUID(result["shareID"])) == result["shareID"]
        share_ids.append(result["shareID"])
        assert allocation["nodeSelector"]["nodeSelectorTerms"] == [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
        ]
        allocate(cluster, name, allocation)
    assert len(set(share_ids)) == 3
    stored_claims = json.loads(
        cluster.kubectl("get", "resourceclaims", "-n", "default", "-o", "json").stdout
    )["items"]
    kept = {
        c["metadata"]["name"]: c["status"]["allocation"]["devices"]["results"][0]["shareID"]
        for c in stored_claims
    }
    assert sorted(kept.values()) == sorted(share_ids)

    # 40G - 27G = 13G left on eth0; eth1 has 10G: 14G fits nowhere.
    refused = review(cluster, [inline("14G")])
    assert not refused["feasible"]
    [reason] = refused["reasons"]
    assert reason["reason"] == "CapacityExhausted"
    assert reason["claim"] == "wants-14g"
    fits = review(cluster, [inline("13G")])
    assert fits["feasible"], fits
    [result] = fits["allocations"][0]["devices"]["results"]
    assert result["device"] == "eth0"
    assert amounts(result) == expect("13G", 1)
    # two such claims at once need both interfaces: 13G and 9G take eth0 and eth1
    pair = review(cluster, [inline("13G"), inline("9G")])
    assert pair["feasible"], pair
    devices = [a["devices"]["results"][0]["device"] for a in pair["allocations"]]
    assert devices == ["eth0", "eth1"]
    # more than any interface has is refused as insufficient, not as used up
    too_big = review(cluster, [inline("41G")])
    assert not too_big["feasible"]
    assert "capacity insufficient 2" in too_big["reasons"][0]["message"]


def test_pool_status_counts_the_shared_nic_once(cluster: ServerProcess) -> None:
    """After the shares above (the module's tests run in order): eth0 is allocated once,
    eth1 is available."""
    with cluster.client() as client:

        def pool() -> dict[str, Any] | None:
            items = client.get(POOLS).json()["items"]
            found = [p for p in items if p["spec"]["driver"] == DRIVER]
            if found and found[0]["status"]["allocatedDevices"] == 1:
                return found[0]
            return None

        status = wait_for(pool, "the NIC pool with its shared device")["status"]
    assert status["totalDevices"] == 2
    assert status["allocatedDevices"] == 1
    assert status["availableDevices"] == 1
    assert status["unavailableDevices"] == 0

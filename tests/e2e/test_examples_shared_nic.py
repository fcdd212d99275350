"""examples/drivers/shared-nic.yaml end to end: a NIC whose bandwidth and queues several
claims share, applied with kubectl to a real server.

Each claim is reviewed (AllocationReview), then allocated as the scheduler would (its status
written with the review's answer), and the next review sees what the earlier shares consume.
Expectations are hand-computed from the file's numbers (its header comment says how):
eth0 has 40G and 16 queues; nic-a takes 10G and 4 queues, nic-b 16G and 1, nic-c 1G and 1;
then 13G is left on eth0 and 10G on eth1, so 14G fits nowhere and 13G fits eth0. Pool
status counts eth0 once, as allocated, and eth1 as available.

Then many clients at once over several rounds, reserving shares and storing them: capacity
is never over-committed and what is left is what a review then fits.
"""

from __future__ import annotations

import concurrent.futures
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from apiserver.api.resource import quantity_text
from apiserver.cel.quantity import parse
from devtools.waiting import wait_for

from .harness import REPO, ServerProcess, start_server
from .objects import write_allocation

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
    write_allocation(server, name, allocation)


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


# -- two replicas, many clients at once ------------------------------------------------------

REVIEWS = "/apis/resource.k8s.io/v1alpha3/allocationreviews"
RESERVATIONS = "/apis/resource.k8s.io/v1alpha3/devicereservations"
CAPACITY = {"eth0": parse("40G").nanos, "eth1": parse("10G").nanos}
ROUNDS, CLIENTS = 3, 16


@pytest.fixture
def fresh_nic(tmp_path: Path) -> Iterator[ServerProcess]:
    server = start_server(tmp_path / "server", [])
    try:
        server.kubectl("apply", "-f", str(NODES))
        server.kubectl("apply", "-f", str(EXAMPLE))
        yield server
    finally:
        server.stop()


def reserving(bandwidth: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha3",
        "kind": "AllocationReview",
        "spec": {
            "claims": [inline(bandwidth)],
            "nodeNames": ["node-1"],
            "reserve": True,
            "reservationSeconds": 120,
        },
    }


def consumed_by_stored_claims(server: ServerProcess) -> dict[str, int]:
    items = server.client().get(f"/apis/{GROUP}/v1/resourceclaims").json()["items"]
    out = {"eth0": 0, "eth1": 0}
    for item in items:
        allocation = (item.get("status") or {}).get("allocation")
        for result in (allocation or {}).get("devices", {}).get("results", ()):
            out[result["device"]] += amounts(result)["bandwidth"]
    return out


def test_concurrent_reserving_reviews_never_overcommit(fresh_nic: ServerProcess) -> None:
    """Rounds of 16 clients at once, each reserving a 5G share; each winner's allocation is
    then stored as a claim. A reservation holds a device whole, so a round's winners hold
    distinct devices; what the stored claims consume never exceeds a device's bandwidth, and
    a review afterwards fits exactly what is left. (One server: on etcd storage, where
    replicas run, an AllocationReview currently answers 503 while its caches catch up.)"""
    servers = [fresh_nic, fresh_nic]
    share_ids: list[str] = []
    for round_ in range(ROUNDS):

        def ask(i: int) -> dict[str, Any]:
            with servers[i % 2].client() as client:
                # 503 (caches behind the store, Retry-After) is an answer to ask again.
                answer = wait_for(
                    lambda: _unless_busy(client.post(REVIEWS, json=reserving("5G"))),
                    "a review that is not 503",
                    interval=1.0,
                )
                assert answer.status_code == 201, answer.text
                status: dict[str, Any] = answer.json()["status"]
                return status

        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            answers = list(pool.map(ask, range(CLIENTS)))
        winners = [a for a in answers if "reservation" in a]
        assert winners, answers
        held = [a["nodes"][0]["allocations"][0]["devices"]["results"][0] for a in winners]
        assert len({r["device"] for r in held}) == len(held)  # never one device twice
        for i, (answer, result) in enumerate(zip(winners, held, strict=True)):
            assert amounts(result)["bandwidth"] == parse("5G").nanos
            share_ids.append(result["shareID"])
            name = f"round-{round_}-{i}"
            writer = servers[(i + 1) % 2]
            writer.kubectl("create", "-f", "-", input=yaml.safe_dump(claim_object(name)))
            allocate(writer, name, answer["nodes"][0]["allocations"][0])
        servers[0].kubectl("delete", "devicereservations", "--all")
        used = consumed_by_stored_claims(servers[round_ % 2])
        assert all(used[d] <= CAPACITY[d] for d in CAPACITY), used
    assert len(set(share_ids)) == len(share_ids)
    used = consumed_by_stored_claims(servers[0])
    left = {d: CAPACITY[d] - used[d] for d in CAPACITY}
    most = max(left.values())
    for server in servers:

        def caught_up(server: ServerProcess = server) -> bool:
            return consumed_by_stored_claims(server) == used

        wait_for(caught_up, "the replica's claims")
        fits = review(server, [inline(quantity_text(most))])
        assert fits["feasible"], (left, fits)
        over = review(server, [inline(quantity_text(most + parse("1G").nanos))])
        assert not over["feasible"], (left, over)


def _unless_busy(response: httpx.Response) -> httpx.Response | None:
    return None if response.status_code == 503 else response


def claim_object(name: str) -> dict[str, Any]:
    spec = inline("5G")["spec"]
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }

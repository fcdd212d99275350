"""The live pool view against the real server, driven with kubectl: ResourcePools carry the
counts a ResourcePoolStatusRequest gives over the same objects, `kubectl get resourcepools`
prints them, field selectors pick by driver and node, a watch sees ALLOCATED move when a
claim is allocated, and every write is 405."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from devtools.waiting import wait_for

from .harness import ServerProcess, kubectl_binary, start_server
from .objects import GROUP, TABLE, assert_read_only, unique, write_allocation

POOLS = f"/apis/{GROUP}/v1alpha3/resourcepools"
COUNTS = ("totalDevices", "allocatedDevices", "availableDevices", "unavailableDevices")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = start_server(
        tmp_path_factory.mktemp("pool-view"), ["--bookmark-interval", "1", "--pool-status"]
    )
    yield proc
    proc.stop()


def apply(server: ServerProcess, *objects: dict[str, Any]) -> None:
    server.kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(o) for o in objects))


def node_slice(
    driver: str,
    pool: str,
    devices: list[dict[str, Any]],
    *,
    name: str | None = None,
    count: int = 1,
    node: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
        "devices": devices,
    }
    if node is None:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{pool}-{driver}"},
        "spec": spec,
    }


def claim(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "r", "exactly": {"deviceClassName": "gpu.example.com", "count": 1}}
                ]
            }
        },
    }


def allocate(server: ServerProcess, name: str, driver: str, devices: list[tuple[str, str]]) -> None:
    """What the scheduler does once it has picked devices: write the claim's allocation."""
    results = [{"request": "r", "driver": driver, "pool": p, "device": d} for p, d in devices]
    write_allocation(server, name, {"devices": {"results": results}})


def pools_of(client: httpx.Client, driver: str) -> dict[str, dict[str, Any]]:
    resp = client.get(POOLS, params={"fieldSelector": f"spec.driver={driver}"})
    assert resp.status_code == 200, resp.text
    return {p["spec"]["poolName"]: p for p in resp.json()["items"]}


def a_cluster(server: ServerProcess, driver: str) -> None:
    """Node pools with an allocation, a NoSchedule taint, a pool of two slices, an
    incomplete pool (two of three slices) and an allNodes pool."""
    gpus = [{"name": f"gpu-{i}"} for i in range(4)]
    tainted = [
        {"name": "gpu-0"},
        {"name": "gpu-1", "taints": [{"key": "x", "effect": "NoSchedule"}]},
    ]
    apply(
        server,
        node_slice(driver, "node-a", gpus, node="node-a"),
        node_slice(driver, "node-b", tainted, node="node-b"),
        node_slice(
            driver, "multi", [{"name": "m0"}], name=f"multi-0-{driver}", count=2, node="node-c"
        ),
        node_slice(
            driver, "multi", [{"name": "m1"}], name=f"multi-1-{driver}", count=2, node="node-c"
        ),
        node_slice(driver, "partial", [{"name": "p0"}], name=f"partial-0-{driver}", count=3),
        node_slice(driver, "partial", [{"name": "p1"}], name=f"partial-1-{driver}", count=3),
        node_slice(driver, "fabric", [{"name": "f0"}, {"name": "f1"}]),
    )
    taken = unique("taken")
    apply(server, claim(taken))
    allocate(server, taken, driver, [("node-a", "gpu-0"), ("node-a", "gpu-1"), ("multi", "m1")])


def rpsr_pools(server: ServerProcess, driver: str) -> dict[str, dict[str, Any]]:
    name = unique("rpsr")
    manifest = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": {"driver": driver},
    }
    apply(server, manifest)
    server.kubectl("wait", "--for=condition=Complete", f"rpsr/{name}", "--timeout=60s")
    status = json.loads(server.kubectl("get", f"rpsr/{name}", "-o", "json").stdout)["status"]
    return {p["poolName"]: p for p in status["pools"]}


def test_the_counts_are_those_of_a_pool_status_request(server: ServerProcess) -> None:
    driver = f"{unique('same')}.example.com"
    a_cluster(server, driver)
    with server.client() as client:

        def settled() -> dict[str, dict[str, Any]] | None:
            pools = pools_of(client, driver)
            ready = len(pools) == 5 and pools["node-a"]["status"]["allocatedDevices"] == 2
            return pools if ready and pools["multi"]["status"]["allocatedDevices"] == 1 else None

        pools = wait_for(settled, "the five pools with their allocations")
    answer = rpsr_pools(server, driver)
    assert set(answer) == set(pools)
    for name, entry in answer.items():
        obj = pools[name]
        mirrored = {
            "driver": obj["spec"]["driver"],
            "poolName": obj["spec"]["poolName"],
            **({"nodeName": obj["spec"]["nodeName"]} if "nodeName" in obj["spec"] else {}),
            **{k: obj["status"][k] for k in (*COUNTS, "sliceCount", "generation")},
        }
        assert mirrored == entry, name
    assert [answer["node-b"][k] for k in COUNTS] == [2, 0, 1, 1]
    assert pools["partial"]["status"]["incomplete"] is True
    assert pools["fabric"]["spec"]["allNodes"] is True


def test_kubectl_get_wide_yaml_and_field_selectors(server: ServerProcess) -> None:
    driver = f"{unique('cols')}.example.com"
    a_cluster(server, driver)
    other = f"{unique('other')}.example.com"
    apply(server, node_slice(other, "node-a", [{"name": "x"}], node="node-a"))
    with server.client() as client:
        wait_for(lambda: len(pools_of(client, driver)) == 5, "the pools")
        wait_for(lambda: len(pools_of(client, other)) == 1, "the other driver's pool")
        wait_for(
            lambda: pools_of(client, driver)["node-a"]["status"]["allocatedDevices"] == 2,
            "the allocation",
        )
    out = server.kubectl("get", "resourcepools", "--field-selector", f"spec.driver={driver}").stdout
    lines = out.splitlines()
    assert lines[0].split() == [
        "NAME",
        "DRIVER",
        "POOL",
        "NODE",
        "TOTAL",
        "ALLOCATED",
        "AVAILABLE",
        "UNAVAILABLE",
        "AGE",
    ]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows[f"{driver}.node-a"][1:8] == [driver, "node-a", "node-a", "4", "2", "2", "0"]
    assert rows[f"{driver}.node-b"][1:8] == [driver, "node-b", "node-b", "2", "0", "1", "1"]
    assert rows[f"{driver}.fabric"][3] == "<all>"
    wide = server.kubectl(
        "get", "resourcepools", "-o", "wide", "--field-selector", f"spec.driver={driver}"
    ).stdout.splitlines()
    assert wide[0].split()[-4:] == ["GENERATION", "SLICES", "PROBLEMS", "AGE"]
    partial = next(line.split() for line in wide[1:] if line.startswith(f"{driver}.partial "))
    assert partial[-4:-1] == ["1", "2", "1"]
    by_node = server.kubectl(
        "get", "resourcepools", "-o", "name", "--field-selector", "spec.nodeName=node-a"
    ).stdout.split()
    assert f"resourcepool.{GROUP}/{driver}.node-a" in by_node
    assert f"resourcepool.{GROUP}/{other}.node-a" in by_node
    assert all(n.endswith(".node-a") for n in by_node)
    both = server.kubectl(
        "get",
        "resourcepools",
        "-o",
        "name",
        "--field-selector",
        f"spec.driver={other},spec.nodeName=node-a",
    ).stdout.split()
    assert both == [f"resourcepool.{GROUP}/{other}.node-a"]
    doc = yaml.safe_load(
        server.kubectl("get", "resourcepool", f"{driver}.multi", "-o", "yaml").stdout
    )
    assert doc["kind"] == "ResourcePool"
    assert doc["spec"] == {"driver": driver, "poolName": "multi", "nodeName": "node-c"}
    assert {k: doc["status"][k] for k in (*COUNTS, "sliceCount", "generation")} == {
        "totalDevices": 2,
        "allocatedDevices": 1,
        "availableDevices": 1,
        "unavailableDevices": 0,
        "sliceCount": 2,
        "generation": 1,
    }
    assert doc["metadata"]["uid"]
    assert int(doc["metadata"]["resourceVersion"]) > 0


def test_kubectl_watch_shows_allocated_move(server: ServerProcess) -> None:
    driver = f"{unique('watch')}.example.com"
    apply(server, node_slice(driver, "node-w", [{"name": "g0"}, {"name": "g1"}], node="node-w"))
    name = f"{driver}.node-w"
    with server.client() as client:
        wait_for(lambda: len(pools_of(client, driver)) == 1, "the pool")
    watcher = subprocess.Popen(
        [
            kubectl_binary(),
            "get",
            "resourcepools",
            "-w",
            "--output-watch-events",
            "--field-selector",
            f"spec.driver={driver}",
            "--request-timeout",
            "60s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "KUBECONFIG": str(server.kubeconfig), "HOME": str(server.workdir)},
    )
    try:
        assert watcher.stdout is not None
        header = watcher.stdout.readline().split()
        assert header[:9] == [
            "EVENT",
            "NAME",
            "DRIVER",
            "POOL",
            "NODE",
            "TOTAL",
            "ALLOCATED",
            "AVAILABLE",
            "UNAVAILABLE",
        ]
        first = watcher.stdout.readline().split()
        assert first[:2] == ["ADDED", name]
        assert first[6:8] == ["0", "2"]
        holder = unique("holder")
        apply(server, claim(holder))
        allocate(server, holder, driver, [("node-w", "g1")])
        moved = watcher.stdout.readline().split()
        assert moved[:2] == ["MODIFIED", name]
        assert moved[6:8] == ["1", "1"]
        server.kubectl("delete", "resourceslice", f"node-w-{driver}")
        gone = watcher.stdout.readline().split()
        assert gone[:2] == ["DELETED", name]
    finally:
        watcher.kill()
        watcher.wait()


def test_resourcepools_are_read_only(server: ServerProcess) -> None:
    writes = (
        ("POST", POOLS),
        ("PUT", f"{POOLS}/x"),
        ("PATCH", f"{POOLS}/x"),
        ("DELETE", f"{POOLS}/x"),
        ("DELETE", POOLS),
    )
    assert_read_only(server, GROUP, "resourcepools", writes)
    with server.client() as client:
        table = client.get(POOLS, headers={"Accept": TABLE}).json()
        assert table["kind"] == "Table"


def test_kubectl_explain_reads_well(server: ServerProcess) -> None:
    out = server.kubectl("explain", "resourcepools.status").stdout
    assert "allocatedDevices" in out
    assert "reservation" in out
    assert "ResourcePoolStatusRequest" in server.kubectl("explain", "resourcepools").stdout


def test_the_view_role_reads_resourcepools(server: ServerProcess) -> None:
    rules = json.loads(
        server.kubectl("get", "clusterrole", "system:aggregate-to-view", "-o", "json").stdout
    )["rules"]
    ours = [r for r in rules if r.get("apiGroups") == [GROUP]]
    assert any(
        "resourcepools" in r["resources"] and r["verbs"] == ["get", "list", "watch"] for r in ours
    )
    viewer = unique("viewer")
    server.kubectl("create", "clusterrolebinding", viewer, "--clusterrole=view", f"--user={viewer}")

    def can(verb: str) -> str:
        got = server.kubectl(
            "auth", "can-i", verb, f"resourcepools.{GROUP}", f"--as={viewer}", check=False
        )
        return got.stdout.strip()

    wait_for(lambda: can("watch") == "yes", "view to aggregate into the binding")
    assert can("delete") == "no"

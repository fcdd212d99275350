"""ResourcePoolStatusRequest in both versions against the real server: the seed's v1alpha1
(stored) and upstream's v1alpha3 (converted), with kubectl, the Python client's generated
``ResourceV1alpha3Api`` and its DynamicClient. An object created in one version is read,
listed and watched in the other at the same resourceVersion, answered once by the
controller; discovery and OpenAPI describe both; bad input is refused in the terms of the
version sent, with nothing stored; creates in both versions, from many clients at once and
through two replicas on one etcd, land once each.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config, dynamic, watch

from devtools.localetcd import LocalEtcd
from devtools.waiting import wait_for

from .harness import REPO, ServerProcess, start_server
from .objects import GROUP, unique

V1ALPHA1 = f"resourcepoolstatusrequests.v1alpha1.{GROUP}"
V1ALPHA3 = f"resourcepoolstatusrequests.v1alpha3.{GROUP}"
DRIVER = "gpu.example.com"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The examples' slices, the controller answering requests, no creation limit (the
    concurrency test creates many)."""
    server = start_server(
        tmp_path_factory.mktemp("versions"),
        ["--pool-status", "--bookmark-interval", "1", "--pool-status-create-rate", "0"],
    )
    try:
        server.kubectl("apply", "-f", str(REPO / "examples"))
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def api(cluster: ServerProcess) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    yield api_client
    api_client.close()


def manifest(version: str, name: str, **spec: Any) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": f"{GROUP}/{version}",
            "kind": "ResourcePoolStatusRequest",
            "metadata": {"name": name},
            "spec": {"driver": DRIVER, **spec},
        }
    )


def get(server: ServerProcess, resource: str, name: str) -> dict[str, Any]:
    out = server.kubectl("get", f"{resource}/{name}", "-o", "json").stdout
    got: dict[str, Any] = json.loads(out)
    return got


def complete(server: ServerProcess, name: str) -> dict[str, Any]:
    server.kubectl("wait", "--for=condition=Complete", f"{V1ALPHA1}/{name}", "--timeout=60s")
    return get(server, V1ALPHA1, name)


def test_kubectl_created_in_v1alpha1_reads_in_v1alpha3(cluster: ServerProcess) -> None:
    name = unique("seed")
    cluster.kubectl(
        "create", "-f", "-", input=manifest("v1alpha1", name, ttlSecondsAfterComplete=3600)
    )
    seed = complete(cluster, name)
    upstream = get(cluster, V1ALPHA3, name)
    assert upstream["apiVersion"] == f"{GROUP}/v1alpha3"
    assert upstream["metadata"]["resourceVersion"] == seed["metadata"]["resourceVersion"]
    assert upstream["metadata"]["uid"] == seed["metadata"]["uid"]
    assert upstream["spec"] == {"driver": DRIVER, "limit": 100}
    status, seed_status = upstream["status"], seed["status"]
    assert status["poolCount"] == seed_status["totalMatchingPools"] > 0
    assert status["conditions"] == seed_status["conditions"]
    assert len(status["pools"]) == len(seed_status["pools"])
    for mine, theirs in zip(status["pools"], seed_status["pools"], strict=True):
        assert mine["resourceSliceCount"] == theirs["sliceCount"]
        for same in ("driver", "poolName", "generation", "totalDevices", "availableDevices"):
            assert mine[same] == theirs[same]
        assert "sliceCount" not in mine
    # kubectl with no version reads the stored (seed's) shape.
    assert get(cluster, "rpsr", name)["apiVersion"] == f"{GROUP}/v1alpha1"
    # A label through v1alpha3 keeps what v1alpha3 has no field for.
    cluster.kubectl("label", f"{V1ALPHA3}/{name}", "team=a")
    after = get(cluster, V1ALPHA1, name)
    assert after["metadata"]["labels"] == {"team": "a"}
    assert after["spec"]["ttlSecondsAfterComplete"] == 3600
    assert after["status"]["observationTime"] == seed_status["observationTime"]


def test_kubectl_table_explain_and_bad_input_in_v1alpha3(cluster: ServerProcess) -> None:
    name = unique("table")
    cluster.kubectl("create", "-f", "-", input=manifest("v1alpha3", name, poolName="node-1"))
    complete(cluster, name)
    table = cluster.kubectl("get", V1ALPHA3, name, "-o", "wide").stdout.splitlines()
    assert table[0].split() == ["NAME", "DRIVER", "POOL", "COMPLETE", "POOLS", "TRUNCATED", "AGE"]
    assert table[1].split()[:6] == [name, DRIVER, "node-1", "True", "1", "false"]
    explained = cluster.kubectl("explain", "rpsr.status", f"--api-version={GROUP}/v1alpha3").stdout
    assert "poolCount" in explained
    assert "totalMatchingPools" not in explained
    assert "totalMatchingPools" in cluster.kubectl("explain", "rpsr.status").stdout
    bad = unique("bad")
    refused = cluster.kubectl(
        "create", "-f", "-", input=manifest("v1alpha3", bad, limit=0), check=False
    )
    assert refused.returncode != 0
    assert "spec.limit" in refused.stderr
    assert cluster.kubectl("get", V1ALPHA1, bad, check=False).returncode != 0


def test_kubectl_apply_client_and_server_side_in_v1alpha3(cluster: ServerProcess) -> None:
    """Client-side apply (a strategic merge patch on the v1alpha3 form) and server-side apply
    (its managed fields recorded in v1alpha3), each twice, the second with a new label; the
    stored v1alpha1 object carries the labels, its spec unchanged."""
    for mode, extra in (("csa", ()), ("ssa", ("--server-side", "--field-manager=versions"))):
        name = unique(mode)
        for labels in ({"round": "1"}, {"round": "2"}):
            doc = yaml.safe_load(manifest("v1alpha3", name, poolName="node-2"))
            doc["metadata"]["labels"] = labels
            cluster.kubectl("apply", *extra, "-f", "-", input=yaml.safe_dump(doc))
        seed = get(cluster, V1ALPHA1, name)
        assert seed["metadata"]["labels"] == {"round": "2"}
        assert seed["spec"] == {"driver": DRIVER, "poolName": "node-2", "limit": 100}
        assert seed["metadata"]["generation"] == 1
        if mode == "ssa":
            shown = cluster.kubectl(
                "get", f"{V1ALPHA1}/{name}", "-o", "json", "--show-managed-fields"
            ).stdout
            managers = {
                (m["manager"], m["apiVersion"])
                for m in json.loads(shown)["metadata"]["managedFields"]
            }
            assert ("versions", f"{GROUP}/v1alpha3") in managers


def test_typed_client_creates_watches_and_reads_v1alpha3(
    cluster: ServerProcess, api: client.ApiClient
) -> None:
    """The generated ResourceV1alpha3Api: create, the MODIFIED event of the answer in its
    model, read, list, delete; the same object through kubectl in v1alpha1."""
    typed = client.ResourceV1alpha3Api(api)
    name = unique("typed")
    listed = typed.list_resource_pool_status_request()
    body = client.V1alpha3ResourcePoolStatusRequest(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1alpha3ResourcePoolStatusRequestSpec(driver=DRIVER, limit=2),
    )
    created = typed.create_resource_pool_status_request(body)
    assert created.spec.limit == 2
    answered = None
    for event in watch.Watch().stream(
        typed.list_resource_pool_status_request,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=60,
    ):
        obj = event["object"]
        if obj.metadata.name == name and obj.status is not None:
            answered = obj
            break
    assert isinstance(answered, client.V1alpha3ResourcePoolStatusRequest)
    assert answered.status.pool_count > len(answered.status.pools) == 2
    assert isinstance(answered.status.pools[0], client.V1alpha3PoolStatus)
    assert answered.status.pools[0].resource_slice_count >= 1
    read = typed.read_resource_pool_status_request(name)
    assert read.metadata.resource_version == answered.metadata.resource_version
    assert name in [r.metadata.name for r in typed.list_resource_pool_status_request().items]
    seed = get(cluster, V1ALPHA1, name)
    assert seed["status"]["truncated"] is True
    assert seed["status"]["totalMatchingPools"] == answered.status.pool_count
    assert seed["metadata"]["resourceVersion"] == read.metadata.resource_version
    # As upstream's store does for the kind, a delete answers with the deleted object.
    deleted = typed.delete_resource_pool_status_request(name)
    assert isinstance(deleted, client.V1alpha3ResourcePoolStatusRequest)
    assert deleted.metadata.name == name
    wait_for(lambda: cluster.kubectl("get", V1ALPHA1, name, check=False).returncode != 0)


def test_dynamic_client_watches_v1alpha1_for_a_v1alpha3_create(
    cluster: ServerProcess, api: client.ApiClient
) -> None:
    dyn = dynamic.DynamicClient(api)
    v1alpha1 = dyn.resources.get(api_version=f"{GROUP}/v1alpha1", kind="ResourcePoolStatusRequest")
    v1alpha3 = dyn.resources.get(api_version=f"{GROUP}/v1alpha3", kind="ResourcePoolStatusRequest")
    start = v1alpha1.get().metadata.resourceVersion
    name = unique("dyn")
    v1alpha3.create(body=yaml.safe_load(manifest("v1alpha3", name)))
    seen: dict[str, Any] = {}
    for event in v1alpha1.watch(resource_version=start, timeout=60):
        obj = event["raw_object"]
        if obj["metadata"]["name"] == name and obj.get("status"):
            seen = obj
            break
    assert seen["apiVersion"] == f"{GROUP}/v1alpha1"
    assert seen["status"]["totalMatchingPools"] == len(seen["status"]["pools"])
    again = v1alpha3.get(name=name)
    assert again.metadata.resourceVersion == seen["metadata"]["resourceVersion"]
    assert again.status.poolCount == seen["status"]["totalMatchingPools"]


def test_discovery_and_openapi_list_both_versions(cluster: ServerProcess) -> None:
    with cluster.client() as http:
        for version in ("v1alpha1", "v1alpha3"):
            resources = http.get(f"/apis/{GROUP}/{version}").json()["resources"]
            names = {r["name"] for r in resources}
            assert {"resourcepoolstatusrequests", "resourcepoolstatusrequests/status"} <= names
            doc = http.get(f"/openapi/v3/apis/{GROUP}/{version}").json()
            assert (
                f"/apis/{GROUP}/{version}/resourcepoolstatusrequests/{{name}}/status"
                in (doc["paths"])
            )
        v2 = http.get("/openapi/v2").json()
    kinds = {
        (gvk["version"], gvk["kind"])
        for schema in v2["definitions"].values()
        for gvk in schema.get("x-kubernetes-group-version-kind", [])
    }
    assert {
        ("v1alpha1", "ResourcePoolStatusRequest"),
        ("v1alpha3", "ResourcePoolStatusRequest"),
    } <= (kinds)
    resources = cluster.kubectl("api-resources", f"--api-group={GROUP}", "-o", "name").stdout
    assert "resourcepoolstatusrequests.resource.k8s.io" in resources.split()


def test_many_clients_create_in_both_versions_at_once(cluster: ServerProcess) -> None:
    """Three rounds of 16 creates, half in each version, all at once: each lands once, and
    both versions list all of them, at one snapshot, at the same resourceVersions."""
    for round_ in range(3):
        names = [unique(f"many-{round_}-{i}") for i in range(16)]

        def create(i_name: tuple[int, str]) -> int:
            i, name = i_name
            version = "v1alpha1" if i % 2 else "v1alpha3"
            with cluster.client() as http:
                body = yaml.safe_load(manifest(version, name))
                return http.post(
                    f"/apis/{GROUP}/{version}/resourcepoolstatusrequests", json=body
                ).status_code

        with ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(create, enumerate(names)))
        assert codes == [201] * 16
        path = f"/apis/{GROUP}/{{}}/resourcepoolstatusrequests"
        with cluster.client() as http:
            seed = http.get(path.format("v1alpha1")).json()
            # The same snapshot in the other version (the controller keeps writing).
            upstream = http.get(
                path.format("v1alpha3"),
                params={
                    "resourceVersion": seed["metadata"]["resourceVersion"],
                    "resourceVersionMatch": "Exact",
                },
            ).json()
        versions = [
            {
                item["metadata"]["name"]: item["metadata"]["resourceVersion"]
                for item in listed["items"]
                if item["metadata"]["name"] in names
            }
            for listed in (seed, upstream)
        ]
        assert set(versions[0]) == set(names)
        assert versions[0] == versions[1]
        assert {item["apiVersion"] for item in upstream["items"]} == {f"{GROUP}/v1alpha3"}


def test_the_creation_limit_counts_both_versions(tmp_path: Path) -> None:
    """A burst of 2 per user: one create in each version takes it; the next, in either
    version, is 429."""
    server = start_server(
        tmp_path / "limited",
        ["--pool-status-create-rate", "0.001", "--pool-status-create-burst", "2"],
    )
    try:
        server.kubectl("create", "-f", "-", input=manifest("v1alpha1", "one"))
        server.kubectl("create", "-f", "-", input=manifest("v1alpha3", "two"))
        with server.client() as http:
            for version in ("v1alpha1", "v1alpha3"):
                body = yaml.safe_load(manifest(version, f"three-{version}"))
                answer = http.post(f"/apis/{GROUP}/{version}/resourcepoolstatusrequests", json=body)
                assert answer.status_code == 429, answer.text
                assert answer.json()["reason"] == "TooManyRequests"
    finally:
        server.stop()


def test_two_replicas_on_one_etcd_serve_both_versions_of_one_object(
    tmp_path: Path, etcd: LocalEtcd
) -> None:
    """Replica A takes creates in v1alpha3 and B in v1alpha1, from many clients at once, in
    two rounds; a v1alpha1 watch on B sees A's creates, each request is answered (by either
    replica's controller) and both replicas read it alike in both versions."""
    args = ["--etcd-prefix", f"/{unique('versions')}", "--pool-status"]
    args += ["--pool-status-create-rate", "0", "--bookmark-interval", "1"]
    a = start_server(tmp_path / "a", args, storage=etcd.url)
    b = start_server(tmp_path / "b", args, storage=etcd.url)
    try:
        a.kubectl("apply", "-f", str(REPO / "examples"))
        for round_ in range(2):
            names = {
                unique(f"rep-{round_}-{i}"): ("v1alpha3" if i % 2 else "v1alpha1")
                for i in range(12)
            }
            with b.client() as http:
                since = http.get(f"/apis/{GROUP}/v1alpha1/resourcepoolstatusrequests").json()[
                    "metadata"
                ]["resourceVersion"]

            def create(item: tuple[str, str]) -> int:
                name, version = item
                server = a if version == "v1alpha3" else b
                with server.client() as http:
                    return http.post(
                        f"/apis/{GROUP}/{version}/resourcepoolstatusrequests",
                        json=yaml.safe_load(manifest(version, name)),
                    ).status_code

            with ThreadPoolExecutor(12) as pool:
                assert list(pool.map(create, names.items())) == [201] * 12
            added: set[str] = set()
            with (
                b.client(timeout=None) as http,
                http.stream(
                    "GET",
                    f"/apis/{GROUP}/v1alpha1/resourcepoolstatusrequests",
                    params={"watch": "true", "resourceVersion": since, "timeoutSeconds": "60"},
                ) as events,
            ):
                for line in events.iter_lines():
                    event = json.loads(line)
                    assert event["object"]["apiVersion"] == f"{GROUP}/v1alpha1"
                    if event["type"] == "ADDED":
                        added.add(event["object"]["metadata"]["name"])
                    if set(names) <= added:
                        break
            assert set(names) <= added
            for name in names:
                seed = complete(b, name)
                upstream = get(a, V1ALPHA3, name)
                assert (
                    upstream["metadata"]["resourceVersion"] == seed["metadata"]["resourceVersion"]
                )
                assert upstream["status"]["poolCount"] == seed["status"]["totalMatchingPools"]
    finally:
        a.stop()
        b.stop()


def test_a_status_written_through_v1alpha3_is_stored_in_the_seed_shape(tmp_path: Path) -> None:
    """What an upstream controller does (this server's own is off): write the answer
    through the v1alpha3 status subresource with kubectl. The stored v1alpha1 status has it
    in the seed's names; a status upstream refuses is refused naming v1alpha3's field, and
    nothing changes."""
    server = start_server(tmp_path / "no-controller", ["--no-pool-status"])
    try:
        name = unique("status")
        server.kubectl("create", "-f", "-", input=manifest("v1alpha1", name))
        status = {
            "poolCount": 3,
            "pools": [
                {"driver": DRIVER, "poolName": "a", "generation": 2,
                 "validationError": "generation 2 has 1 of 2 slices"},
                {"driver": DRIVER, "poolName": "b", "generation": 1, "resourceSliceCount": 1,
                 "totalDevices": 4, "allocatedDevices": 1, "availableDevices": 3,
                 "unavailableDevices": 0, "nodeName": "node-b"},
            ],
            "conditions": [{"type": "Complete", "status": "True", "reason": "Done",
                            "message": "", "lastTransitionTime": "2026-11-25T10:00:00Z"}],
        }  # fmt: skip
        server.kubectl(
            "patch", f"{V1ALPHA3}/{name}", "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": status}),
        )  # fmt: skip
        seed = get(server, V1ALPHA1, name)["status"]
        assert (seed["totalMatchingPools"], seed["truncated"]) == (3, True)
        # Answered when its condition says: this server's controller would leave it alone.
        assert seed["observationTime"] == "2026-11-25T10:00:00Z"
        assert seed["validationErrors"] == ["pool a: generation 2 has 1 of 2 slices"]
        assert seed["pools"][1]["sliceCount"] == 1
        assert seed["pools"][1]["nodeName"] == "node-b"
        assert seed["pools"][0]["totalDevices"] == 0  # unset upstream: stored as 0
        assert get(server, V1ALPHA3, name)["status"]["pools"][0]["validationError"] == (
            "generation 2 has 1 of 2 slices"
        )
        before = get(server, V1ALPHA1, name)["metadata"]["resourceVersion"]
        refused = server.kubectl(
            "patch", f"{V1ALPHA3}/{name}", "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": {"poolCount": -1}}), check=False,
        )  # fmt: skip
        assert refused.returncode != 0
        assert "status.poolCount" in refused.stderr
        assert get(server, V1ALPHA1, name)["metadata"]["resourceVersion"] == before
    finally:
        server.stop()

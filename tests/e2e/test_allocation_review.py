"""AllocationReview through the real server and kubectl: answers over the example cluster
(nodes, classes, slices) checked for validity, not against a fixed device list; reasons for
infeasible nodes; reserving reviews hold devices in DeviceReservations that later reviews
respect; concurrent reserving reviews never share a device; a review sees what was applied
just before it."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from .harness import REPO, ServerProcess, start_server

GROUP = "resource.k8s.io"
PATH = f"/apis/{GROUP}/v1alpha3/allocationreviews"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_server(tmp_path_factory.mktemp("allocation"), [])
    for name in ("00-deviceclasses.yaml", "05-nodes.yaml", "10-node-slices.yaml"):
        server.kubectl("apply", "-f", str(REPO / "examples" / name))
    yield server
    server.stop()


def gpu_claim(count: int = 1, selector: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu.example.com", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}


def review(server: ServerProcess, spec: dict[str, Any]) -> dict[str, Any]:
    body = {"apiVersion": f"{GROUP}/v1alpha3", "kind": "AllocationReview", "spec": spec}
    # kubectl's own field validation: no PATCH operation for the kind in OpenAPI v3, so it
    # reads the protobuf OpenAPI v2, then asks the server to validate strictly.
    out = server.kubectl("create", "-f", "-", "-o", "yaml", input=yaml.safe_dump(body)).stdout
    answer: dict[str, Any] = yaml.safe_load(out)
    return answer


def slice_devices(server: ServerProcess) -> dict[str, set[str]]:
    """Node -> the gpu.example.com devices its node-local slice publishes."""
    slices = server.client().get(f"/apis/{GROUP}/v1/resourceslices").json()["items"]
    out: dict[str, set[str]] = {}
    for item in slices:
        spec = item["spec"]
        if spec["driver"] == "gpu.example.com" and spec.get("nodeName"):
            out.setdefault(spec["nodeName"], set()).update(d["name"] for d in spec["devices"])
    return out


def test_answers_are_valid_sorted_and_explained(cluster: ServerProcess) -> None:
    published = slice_devices(cluster)
    answer = review(
        cluster,
        {
            "claims": [{"name": "two-gpus", "spec": gpu_claim(2)}],
            "nodeNames": [*sorted(published), "no-such-node"],
        },
    )
    nodes = answer["status"]["nodes"]
    assert {n["nodeName"] for n in nodes} == {*published, "no-such-node"}
    ranks = [(not n["feasible"], -n["score"], n["nodeName"]) for n in nodes]
    assert ranks == sorted(ranks)  # best first: feasible, score, then name
    for node in nodes:
        if not node["feasible"]:
            assert node["reasons"], node
            engine = [r for r in node["reasons"] if r["reason"] != "NodeNotFound"]
            assert all(r["claim"] and r["reason"] and r["message"] for r in engine)
            continue
        [allocation] = node["allocations"]
        results = allocation["devices"]["results"]
        assert len(results) == 2
        assert {r["request"] for r in results} == {"gpu"}
        devices = {r["device"] for r in results}
        assert len(devices) == 2  # no device twice
        assert devices <= published[node["nodeName"]]
        assert {r["pool"] for r in results} == {node["nodeName"]}
    missing = next(n for n in nodes if n["nodeName"] == "no-such-node")
    assert missing["feasible"] is False
    # Said first: the name is not a known node (a typo, most likely), then why nothing fit.
    assert missing["reasons"][0]["reason"] == "NodeNotFound"
    assert "no Node no-such-node is known" in missing["reasons"][0]["message"]
    assert "reachable" in missing["reasons"][1]["message"]
    assert all(
        r["reason"] != "NodeNotFound"
        for n in nodes
        if n is not missing
        for r in n.get("reasons", [])
    )


def test_a_selector_that_excludes_every_device_is_no_matching_devices(
    cluster: ServerProcess,
) -> None:
    """The engine's code, claim and request come through as they are: the selector alone
    left nothing on the node (what the shim answers as unresolvable)."""
    node = "node-1"
    published = len(slice_devices(cluster)[node])
    spec = gpu_claim(selector='device.driver == "no.such.driver"')
    answer = review(cluster, {"claims": [{"name": "picky", "spec": spec}], "nodeNames": [node]})
    [entry] = answer["status"]["nodes"]
    assert entry["feasible"] is False
    [reason] = entry["reasons"]
    assert reason["reason"] == "NoMatchingDevices"
    assert reason["request"] == "gpu"
    assert reason["claim"].endswith("picky")
    assert f"selector #0 excluded {published}" in reason["message"]


def test_bad_reviews_name_the_field_and_a_missing_claim_is_404(cluster: ServerProcess) -> None:
    bad = {
        "apiVersion": f"{GROUP}/v1alpha3",
        "kind": "AllocationReview",
        "spec": {"claims": [], "reservationSeconds": 601},
    }
    answer = cluster.client().post(PATH, json=bad)
    assert answer.status_code == 422
    fields = {c["field"] for c in answer.json()["details"]["causes"]}
    assert fields == {"spec.claims", "spec.reservationSeconds"}
    missing = {**bad, "spec": {"claims": [{"namespace": "default", "name": "nope"}]}}
    assert cluster.client().post(PATH, json=missing).status_code == 404
    assert cluster.client().get(PATH).status_code == 405


def test_kubectl_validates_a_review_strictly_without_flags(cluster: ServerProcess) -> None:
    """kubectl's default ``--validate=strict`` on a create-only kind: with no PATCH operation
    to say the server validates fields, kubectl checks the body against the kind's schema in
    the protobuf OpenAPI v2 itself and refuses the field it does not know, naming it; the
    server, asked to validate strictly, refuses it too."""
    body = {
        "apiVersion": f"{GROUP}/v1alpha3",
        "kind": "AllocationReview",
        "spec": {"claims": [{"name": "c", "spec": gpu_claim()}], "nodeNamez": ["node-1"]},
    }
    done = cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(body), check=False)
    assert done.returncode != 0
    assert "nodeNamez" in done.stderr
    strict = cluster.client().post(PATH, params={"fieldValidation": "Strict"}, json=body)
    assert strict.status_code == 400, strict.text
    assert 'unknown field "spec.nodeNamez"' in strict.json()["message"]


def test_reservations_hold_devices_for_later_reviews(cluster: ServerProcess) -> None:
    node = "node-2"
    free = sorted(slice_devices(cluster)[node])
    taken: set[str] = set()
    for _ in free:
        answer = review(
            cluster,
            {
                "claims": [{"name": "one", "spec": gpu_claim()}],
                "nodeNames": [node],
                "reserve": True,
                "reservationSeconds": 120,
            },
        )["status"]
        reservation = answer["reservation"]
        assert reservation["nodeName"] == node
        [device] = answer["nodes"][0]["allocations"][0]["devices"]["results"]
        assert device["device"] not in taken
        taken.add(device["device"])
    assert taken == set(free)
    listed = cluster.kubectl("get", "devicereservations").stdout
    rows = [line.split() for line in listed.splitlines()[1:]]
    assert [row[1] for row in rows] == [node] * len(free)  # the NODE column
    full = review(cluster, {"claims": [{"name": "one", "spec": gpu_claim()}], "nodeNames": [node]})
    [answer] = full["status"]["nodes"]
    assert answer["feasible"] is False
    assert f"reserved {len(free)}" in answer["reasons"][0]["message"]
    # Devices others hold: another pod's going could free them, so not NoMatchingDevices.
    assert answer["reasons"][0]["reason"] == "Unsatisfiable"
    cluster.kubectl("delete", "devicereservations", "--all")
    again = review(cluster, {"claims": [{"name": "one", "spec": gpu_claim()}], "nodeNames": [node]})
    assert again["status"]["nodes"][0]["feasible"] is True


def test_fifty_reserving_reviews_for_the_last_ten_devices(cluster: ServerProcess) -> None:
    """50 reserving reviews at once for a node with 10 free devices: exactly 10 hold a
    device, none twice; the other 40 are answered, without a reservation."""
    node = "node-5"
    ten = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "node-5-ten"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "node-5-ten", "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": [
                {"name": f"gpu-{i}", "attributes": {"model": {"string": "l40"}}} for i in range(10)
            ],
        },
    }
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(ten))
    selector = 'device.attributes["gpu.example.com"].model == "l40"'
    body = {
        "apiVersion": f"{GROUP}/v1alpha3",
        "kind": "AllocationReview",
        "spec": {
            "claims": [{"name": "one", "spec": gpu_claim(1, selector)}],
            "nodeNames": [node],
            "reserve": True,
            "reservationSeconds": 120,
        },
    }

    def ask(_: int) -> dict[str, Any]:
        with cluster.client() as client:
            answer = client.post(PATH, json=body)
            assert answer.status_code == 201, answer.text
            status: dict[str, Any] = answer.json()["status"]
            return status

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(ask, range(50)))
    held = [
        a["nodes"][0]["allocations"][0]["devices"]["results"][0]["device"]
        for a in answers
        if "reservation" in a
    ]
    assert len(held) == 10
    assert len(set(held)) == 10
    reservations = cluster.client().get(f"/apis/{GROUP}/v1alpha3/devicereservations").json()
    stored = [d["device"] for r in reservations["items"] for d in r["spec"]["devices"]]
    assert sorted(stored) == sorted(held)
    cluster.kubectl("delete", "devicereservations", "--all")
    cluster.kubectl("delete", "resourceslice", "node-5-ten")


def test_a_review_sees_what_was_applied_just_before(cluster: ServerProcess) -> None:
    selector = 'device.attributes["gpu.example.com"].model == "h200"'
    before = review(cluster, {"claims": [{"name": "h200", "spec": gpu_claim(1, selector)}]})
    assert not any(n["feasible"] for n in before["status"]["nodes"])
    new_slice = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "node-5-h200"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "node-5-h200", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "node-5",
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "h200"}}}],
        },
    }
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(new_slice))
    after = review(cluster, {"claims": [{"name": "h200", "spec": gpu_claim(1, selector)}]})
    feasible = [n["nodeName"] for n in after["status"]["nodes"] if n["feasible"]]
    assert feasible == ["node-5"]

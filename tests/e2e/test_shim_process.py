"""The scheduler shim as kube-scheduler meets it: a separate process serving HTTPS with
its own certificate, reading the server with a kubeconfig of a user that holds only the
bootstrap ``dra-scheduler-shim`` ClusterRole. A pod without claims passes filter
everywhere (Nodes or NodeNames), gets no scores, and /bind binds it through
``pods/binding`` (kubectl shows the node); a second bind is the server's conflict in the
protocol's ``Error``. The role allows each rule of the install's ClusterRole for the shim
and nothing beside it. With the server's own AllocationReview: a pod whose claim gets a
fabric device binds once a controller marks it attached, and fails when nobody does within
the attach timeout; the shim's /metrics counts the calls and the waits."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from apiserver.api.resource import NEEDS_ATTACHING
from devtools.waiting import wait_for

from .harness import REPO, ServerProcess, ShimProcess, shim_binding, start_server, start_shim_as
from .objects import bind_args, claim_object, pod_object, unique

ROLE = REPO / "manifests" / "components" / "scheduler-shim" / "shim-rbac.yaml"
ATTACH_TIMEOUT = 3.0
FABRIC = "fabric.shim.example.com"


def _granted() -> list[tuple[str, str, str, str]]:
    """(verb, group, resource, subresource) of each rule of the install's shim role."""
    [role] = [d for d in yaml.safe_load_all(ROLE.read_text()) if d["kind"] == "ClusterRole"]
    out = []
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                name, _, sub = resource.partition("/")
                out += [(verb, group, name, sub) for verb in rule["verbs"]]
    return out


NOT_GRANTED = [
    ("update", "resource.k8s.io", "resourceclaims", ""),
    ("patch", "resource.k8s.io", "resourceclaims", "status"),
    ("delete", "", "pods", ""),
    ("list", "", "pods", ""),
    ("create", "resource.k8s.io", "resourceslices", ""),
    ("get", "resource.k8s.io", "devicereservations", ""),
    ("list", "resource.k8s.io", "devicereservations", ""),
    ("create", "authorization.k8s.io", "subjectaccessreviews", ""),
]


@pytest.fixture(scope="module")
def tokens() -> dict[str, str]:
    return {user: secrets.token_urlsafe(16) for user in ("admin", "scheduler")}


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, tokens: dict[str, str]
) -> Iterator[ServerProcess]:
    """A server of this module's own, with a user for the shim bound to its role."""
    workdir = tmp_path_factory.mktemp("shimserver")
    token_file = workdir / "tokens.csv"
    token_file.write_text(
        f'{tokens["admin"]},admin,admin,"system:masters"\n'
        f"{tokens['scheduler']},scheduler,scheduler-uid\n"
    )
    proc = start_server(workdir, ["--token-auth-file", str(token_file)])
    proc.kubectl("apply", "-f", "-", input=shim_binding("scheduler"))
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def shim(
    server: ServerProcess, tokens: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ShimProcess]:
    proc = start_shim_as(
        server,
        tmp_path_factory.mktemp("shim"),
        "scheduler",
        tokens["scheduler"],
        ["--attach-timeout", str(ATTACH_TIMEOUT)],
    )
    yield proc
    proc.stop()


@pytest.mark.parametrize(
    ("verb", "group", "resource", "subresource", "allowed"),
    [*((*g, True) for g in _granted()), *((*n, False) for n in NOT_GRANTED)],
)
def test_the_shim_role_allows_what_the_shim_does(
    server: ServerProcess,
    tokens: dict[str, str],
    verb: str,
    group: str,
    resource: str,
    subresource: str,
    allowed: bool,
) -> None:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "verb": verb,
                "group": group,
                "resource": resource,
                "subresource": subresource,
                "namespace": "default",
            }
        },
    }
    with server.client() as client:
        client.headers["Authorization"] = f"Bearer {tokens['scheduler']}"
        answer = client.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", json=review)
    assert answer.status_code == 201, answer.text
    assert answer.json()["status"]["allowed"] is allowed


def _pod(server: ServerProcess) -> dict[str, object]:
    name = unique("plain")
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    with server.client() as client:
        stored: dict[str, object] = client.get(f"/api/v1/namespaces/default/pods/{name}").json()
    return stored


def test_filter_and_prioritize_of_a_pod_without_claims(
    server: ServerProcess, shim: ShimProcess
) -> None:
    pod = _pod(server)
    nodes = [{"metadata": {"name": n}} for n in ("node-1", "node-2")]
    with shim.client() as client:
        by_name = client.post("/filter", json={"Pod": pod, "Nodes": None, "NodeNames": ["node-1"]})
        by_node = client.post("/filter", json={"Pod": pod, "Nodes": {"items": nodes}})
        scores = client.post("/prioritize", json={"Pod": pod, "NodeNames": ["node-1", "node-2"]})
    assert by_name.json() == {
        "Nodes": None,
        "NodeNames": ["node-1"],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }
    assert [n["metadata"]["name"] for n in by_node.json()["Nodes"]["items"]] == ["node-1", "node-2"]
    assert by_node.json()["NodeNames"] is None
    assert scores.json() == [{"Host": "node-1", "Score": 0}, {"Host": "node-2", "Score": 0}]


def test_bind_binds_the_pod_once(server: ServerProcess, shim: ShimProcess) -> None:
    pod = _pod(server)
    meta = pod["metadata"]
    assert isinstance(meta, dict)
    args = {
        "PodName": meta["name"],
        "PodNamespace": "default",
        "PodUID": meta["uid"],
        "Node": "node-7",
    }
    with shim.client() as client:
        first = client.post("/bind", json=args)
        second = client.post("/bind", json={**args, "Node": "node-8"})
    assert first.status_code == 200
    assert first.json() == {"Error": ""}
    assert 'already assigned to node "node-7"' in second.json()["Error"]

    wide = server.kubectl("get", "pod", meta["name"], "-o", "wide").stdout.splitlines()
    assert wide[1].split()[wide[0].split().index("NODE")] == "node-7"


# -- a bind that waits for a fabric device, with the server's own allocation ------------


def _apply(server: ServerProcess, *docs: dict[str, Any]) -> None:
    server.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


@pytest.fixture(scope="module")
def fabric(server: ServerProcess) -> str:
    """A node and a fabric pool every node reaches (4 devices that must be attached);
    the DeviceClass claims ask for."""
    node = unique("fabric-node")
    pool = unique("fabric-pool")
    _apply(
        server,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": FABRIC},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{FABRIC}"'}}]},
        },
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}},
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": pool},
            "spec": {
                "driver": FABRIC,
                "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                "allNodes": True,
                "devices": [
                    {"name": f"gpu-{i}", "attributes": {NEEDS_ATTACHING: {"bool": True}}}
                    for i in range(4)
                ],
            },
        },
    )
    return node


def _claiming_pod(server: ServerProcess) -> dict[str, Any]:
    claim, pod = unique("fabric-claim"), unique("fabric-pod")
    request = {"name": "gpu", "exactly": {"deviceClassName": FABRIC}}
    _apply(server, claim_object(claim, request), pod_object(pod, claim))
    with server.client() as client:
        stored: dict[str, Any] = client.get(f"/api/v1/namespaces/default/pods/{pod}").json()
    return stored


def _scrape(shim: ShimProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with shim.client() as client:
        text = client.get("/metrics").text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _delta(before: dict[Any, float], after: dict[Any, float], name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def _claim(server: ServerProcess, pod: dict[str, Any]) -> dict[str, Any]:
    name = pod["spec"]["resourceClaims"][0]["resourceClaimName"]
    with server.client() as client:
        found: dict[str, Any] = client.get(
            f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{name}"
        ).json()
    return found


def _attach(server: ServerProcess, pod: dict[str, Any]) -> None:
    """What a composable controller does: mark the requested device attached."""
    claim = wait_for(
        lambda: (c := _claim(server, pod)).get("status", {}).get("devices") and c,
        "the bind's attach request in the claim",
    )
    for entry in claim["status"]["devices"]:
        entry["conditions"].append(
            {
                "type": "kubernetes.io/is-attached",
                "status": "True",
                "lastTransitionTime": "2026-11-24T06:00:00Z",
                "reason": "Attached",
                "message": "attached by the test",
            }
        )
    path = f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{claim['metadata']['name']}"
    with server.client() as client:
        answer = client.put(f"{path}/status", json=claim)
    assert answer.status_code == 200, answer.text


def test_filter_then_bind_with_attaching_counts_calls_and_waits(
    server: ServerProcess, shim: ShimProcess, fabric: str
) -> None:
    before = _scrape(shim)
    pod = _claiming_pod(server)
    with shim.client() as client:
        filtered = client.post("/filter", json={"Pod": pod, "NodeNames": [fabric]}).json()
        assert filtered["NodeNames"] == [fabric], filtered
        scores = client.post("/prioritize", json={"Pod": pod, "NodeNames": [fabric]}).json()
        assert [s["Host"] for s in scores] == [fabric]
        controller = threading.Thread(target=_attach, args=(server, pod))
        controller.start()
        bound = client.post("/bind", json=bind_args(pod, fabric)).json()
        controller.join()
    assert bound == {"Error": ""}
    wide = server.kubectl("get", "pod", pod["metadata"]["name"], "-o", "wide").stdout.splitlines()
    assert wide[1].split()[wide[0].split().index("NODE")] == fabric

    after = _scrape(shim)
    calls = "dra_scheduler_shim_extender_requests_total"
    assert _delta(before, after, calls, verb="filter", outcome="ok") == 1
    assert _delta(before, after, calls, verb="prioritize", outcome="ok") == 1
    assert _delta(before, after, calls, verb="bind", outcome="ok") == 1
    assert _delta(before, after, "dra_scheduler_shim_attach_waits_started_total") == 1
    assert _delta(before, after, "dra_scheduler_shim_attach_waits_total", outcome="attached") == 1
    waited = "dra_scheduler_shim_attach_wait_duration_seconds_count"
    assert _delta(before, after, waited, outcome="attached") == 1


def test_a_bind_nobody_attaches_times_out_and_is_counted(
    server: ServerProcess, shim: ShimProcess, fabric: str
) -> None:
    before = _scrape(shim)
    pod = _claiming_pod(server)
    with shim.client() as client:
        answer = client.post("/bind", json=bind_args(pod, fabric)).json()
    assert answer["Error"].startswith(f"timed out after {ATTACH_TIMEOUT:g} s waiting for")
    assert "allocation" not in _claim(server, pod).get("status", {})

    after = _scrape(shim)
    calls = "dra_scheduler_shim_extender_requests_total"
    assert _delta(before, after, calls, verb="bind", outcome="error") == 1
    assert _delta(before, after, "dra_scheduler_shim_attach_waits_started_total") == 1
    assert _delta(before, after, "dra_scheduler_shim_attach_waits_total", outcome="timed_out") == 1
    assert _delta(before, after, "dra_scheduler_shim_attach_waits_total", outcome="attached") == 0
    waited = "dra_scheduler_shim_attach_wait_duration_seconds_sum"
    assert _delta(before, after, waited, outcome="timed_out") >= ATTACH_TIMEOUT

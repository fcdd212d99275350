"""Upstream's allocator test suite (``tests/unit/allocator/upstream/*.yaml``) through a real
server: every runnable case's objects are created over HTTPS (node, DeviceClasses,
ResourceSlices, claims holding the already-allocated devices, the claims to allocate), an
AllocationReview asks for the case's node, and the answer is compared with upstream's
expectation as the unit runner compares the engine's (``upstream_cases``). The objects are
deleted again before the next case (the names repeat across cases).

What differs from the unit runner: validation runs. A case marked ``refusedAtCreate``
(upstream's allocator errors on an object that kube-apiserver validation refuses, such as
CEL that does not compile) agrees only when our server refuses one of its objects at
create with a 422; any other refusal disagrees. Marks: ``divergence`` and
``divergenceServer`` (disagreements only through the server, e.g. objects our validation
still refuses) run as strict xfails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.unit.allocator.upstream_cases import (
    Case,
    allocated_claims,
    load_cases,
    runnable,
    verdict,
)

from .harness import ServerProcess, start_server

NAMESPACE = "upstream"
RESOURCE = "/apis/resource.k8s.io/v1"
REVIEWS = "/apis/resource.k8s.io/v1alpha3/allocationreviews"
CASES = runnable(load_cases())


class Refused(Exception):
    """The server refused an object at create."""


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    server: ServerProcess = start_server(tmp_path_factory.mktemp("upstream"), [])
    with server.client() as client:
        namespace = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": NAMESPACE,
                # admin access is allowed only in namespaces so labelled, as upstream
                "labels": {"resource.kubernetes.io/admin-access": "true"},
            },
        }
        assert client.post("/api/v1/namespaces", json=namespace).status_code == 201
        yield client
    server.stop()


def _create(client: httpx.Client, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    answer = client.post(path, json=obj)
    if answer.status_code == 422:
        causes = answer.json().get("details", {}).get("causes") or []
        raise Refused(
            f"{obj['kind']} {obj['metadata']['name']}: {[c.get('field') for c in causes]}"
        )
    assert answer.status_code == 201, answer.text
    out: dict[str, Any] = answer.json()
    return out


def _clean(client: httpx.Client) -> None:
    for path in (
        f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaims",
        f"{RESOURCE}/resourceslices",
        f"{RESOURCE}/deviceclasses",
        "/api/v1/nodes",
    ):
        answer = client.delete(path)
        assert answer.status_code == 200, answer.text


def _setup(client: httpx.Client, case: Case) -> None:
    raw = case.raw
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": raw["node"]["name"], "labels": raw["node"]["labels"]},
    }
    _create(client, "/api/v1/nodes", node)
    for obj in raw["classes"]:
        _create(
            client,
            f"{RESOURCE}/deviceclasses",
            {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", **obj},
        )
    for obj in raw["slices"]:
        _create(
            client,
            f"{RESOURCE}/resourceslices",
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", **obj},
        )
    claims = f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaims"
    for obj in allocated_claims(case):
        status = obj.pop("status")
        obj["metadata"]["namespace"] = NAMESPACE
        stored = _create(client, claims, obj)
        answer = client.put(
            f"{claims}/{obj['metadata']['name']}/status", json={**stored, "status": status}
        )
        if answer.status_code == 422:
            raise Refused(f"allocated claim status: {answer.json().get('message')}")
        assert answer.status_code == 200, answer.text
    for obj in raw["claims"]:
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", **obj}
        body["metadata"] = {**obj["metadata"], "namespace": NAMESPACE}
        _create(client, claims, body)


def server_verdict(client: httpx.Client, case: Case) -> str | None:
    _clean(client)
    try:
        _setup(client, case)
    except Refused as refused:
        if case.mark("refusedAtCreate") is not None:
            return None  # refused before any allocator sees it, as kube-apiserver does
        return f"refused at create: {refused}"
    if case.mark("refusedAtCreate") is not None:
        return f"created, but kube-apiserver refuses it: {case.mark('refusedAtCreate')}"
    if not case.raw["claims"]:
        return None  # nothing to review: upstream allocates nothing
    review = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "AllocationReview",
        "spec": {
            "claims": [
                {"namespace": NAMESPACE, "name": c["metadata"]["name"]} for c in case.raw["claims"]
            ],
            "nodeNames": [case.raw["node"]["name"]],
        },
    }
    answer = client.post(REVIEWS, json=review)
    assert answer.status_code == 201, answer.text
    [node] = answer.json()["status"]["nodes"]
    allocations = node.get("allocations") or []
    return verdict(case, node["feasible"], allocations, None)


def _params() -> list[Any]:
    out = []
    for case in CASES:
        reason = case.mark("divergence") or case.mark("divergenceServer")
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


@pytest.mark.parametrize("case", _params())
def test_upstream_case_through_review(api: httpx.Client, case: Case) -> None:
    problem = server_verdict(api, case)
    assert problem is None, f"{case.raw['upstream']}: {problem}"

"""The scheduler shim's extender protocol, in process: the exact JSON kube-scheduler sends
to /filter, /prioritize and /bind (Node objects or node names) and the exact answers it
reads, with the allocation API below it played by a small in-process app that records the
AllocationReviews it is asked."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import Response

from apiserver.shim.extender import MAX_EXTENDER_PRIORITY, BindArgs, FilterArgs, scaled
from tests.unit.shim.inprocess import REVIEWS, shim_over


def _pod(claims: list[dict[str, Any]] | None = None, **status: Any) -> dict[str, Any]:
    """A pod as kube-scheduler serialises it (fields it sets included)."""
    return {
        "metadata": {
            "name": "trainer",
            "namespace": "ml",
            "uid": "0b7c2f0e-5d5c-4b8e-9a51-2f1d7a3c9e11",
            "resourceVersion": "812",
            "creationTimestamp": "2026-11-24T06:00:00Z",
        },
        "spec": {
            "containers": [{"name": "main", "image": "trainer:1", "resources": {}}],
            "resourceClaims": claims
            if claims is not None
            else [{"name": "gpu", "resourceClaimName": "trainer-gpu"}],
            "schedulerName": "default-scheduler",
        },
        "status": {"phase": "Pending", "qosClass": "BestEffort", **status},
    }


def _node(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def _entry(node: str, score: int | None = None, reasons: list[dict[str, str]] | None = None):
    if reasons is None:
        return {"nodeName": node, "feasible": True, "score": score, "allocations": [{}]}
    return {"nodeName": node, "feasible": False, "reasons": reasons}


NO_GPU = {
    "claim": "ml/trainer-gpu",
    "request": "gpu",
    "reason": "NoCandidates",
    "message": "0 of 2",
}
ALL_USED = {
    "claim": "ml/trainer-gpu",
    "request": "gpu",
    "reason": "Allocated",
    "message": "2 in use",
}

ANSWER = {
    "node-a": _entry("node-a", 90),
    "node-b": _entry("node-b", 40),
    "node-c": _entry("node-c", reasons=[NO_GPU]),
    "node-d": _entry("node-d", reasons=[ALL_USED]),
}


class AllocationAPI:
    """The allocation API as the shim sees it: reviews answered from ``ANSWER``."""

    def __init__(self) -> None:
        self.reviews: list[dict[str, Any]] = []
        self.app = FastAPI()

        @self.app.post(REVIEWS)
        async def review(request: Request) -> Response:
            body = orjson.loads(await request.body())
            self.reviews.append(body)
            nodes = [ANSWER[n] for n in body["spec"]["nodeNames"] if n in ANSWER]
            body["status"] = {"nodes": sorted(nodes, key=lambda e: -(e.get("score") or -1))}
            return Response(orjson.dumps(body), 201, media_type="application/json")


@pytest.fixture
def api() -> AllocationAPI:
    return AllocationAPI()


@pytest.fixture
async def shim(api: AllocationAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with shim_over(api.app) as client:
        yield client


async def test_filter_with_node_names_answers_names_and_reasons(
    shim: httpx.AsyncClient, api: AllocationAPI
) -> None:
    sent = {"Pod": _pod(), "Nodes": None, "NodeNames": ["node-a", "node-b", "node-c", "node-d"]}
    answer = await shim.post("/filter", json=sent)
    assert answer.status_code == 200
    result = answer.json()
    assert set(result) == {
        "Nodes",
        "NodeNames",
        "FailedNodes",
        "FailedAndUnresolvableNodes",
        "Error",
    }
    assert result["Nodes"] is None
    assert result["NodeNames"] == ["node-a", "node-b"]
    assert list(result["FailedNodes"]) == ["node-d"]
    assert "Allocated: 2 in use" in result["FailedNodes"]["node-d"]
    assert list(result["FailedAndUnresolvableNodes"]) == ["node-c"]
    assert "ml/trainer-gpu/gpu: NoCandidates" in result["FailedAndUnresolvableNodes"]["node-c"]
    assert result["Error"] == ""
    assert api.reviews[0]["spec"] == {
        "claims": [{"namespace": "ml", "name": "trainer-gpu"}],
        "nodeNames": ["node-a", "node-b", "node-c", "node-d"],
        "answer": "Scores",
    }


async def test_filter_with_nodes_answers_the_node_objects_that_fit(shim: httpx.AsyncClient) -> None:
    nodes = [_node("node-c"), _node("node-a")]
    sent = {"Pod": _pod(), "Nodes": {"metadata": {}, "items": nodes}, "NodeNames": None}
    result = (await shim.post("/filter", json=sent)).json()
    assert result["NodeNames"] is None
    assert result["Nodes"]["items"] == [_node("node-a")]
    assert list(result["FailedAndUnresolvableNodes"]) == ["node-c"]


async def test_filter_reads_claims_made_from_templates(
    shim: httpx.AsyncClient, api: AllocationAPI
) -> None:
    claims = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    waiting = _pod(claims)
    result = (await shim.post("/filter", json={"Pod": waiting, "NodeNames": ["node-a"]})).json()
    assert result["NodeNames"] == []
    assert "gpu" in result["FailedNodes"]["node-a"]
    assert api.reviews == []  # nothing to review until the claim exists

    made = _pod(claims, resourceClaimStatuses=[{"name": "gpu", "resourceClaimName": "t-gpu-x1"}])
    result = (await shim.post("/filter", json={"Pod": made, "NodeNames": ["node-a"]})).json()
    assert result["NodeNames"] == ["node-a"]
    assert api.reviews[0]["spec"]["claims"] == [{"namespace": "ml", "name": "t-gpu-x1"}]


async def test_a_pod_without_claims_fits_everywhere_unasked(
    shim: httpx.AsyncClient, api: AllocationAPI
) -> None:
    sent = {"Pod": _pod([]), "NodeNames": ["node-c", "node-x"]}
    result = (await shim.post("/filter", json=sent)).json()
    assert result["NodeNames"] == ["node-c", "node-x"]
    assert result["FailedNodes"] == {}
    assert api.reviews == []


async def test_prioritize_scales_scores_to_the_extender_range(shim: httpx.AsyncClient) -> None:
    sent = {"Pod": _pod(), "NodeNames": ["node-b", "node-a", "node-d"]}
    answer = await shim.post("/prioritize", json=sent)
    assert answer.status_code == 200
    assert answer.json() == [
        {"Host": "node-b", "Score": 4},
        {"Host": "node-a", "Score": 9},
        {"Host": "node-d", "Score": 0},
    ]
    nodes = {"Pod": _pod(), "Nodes": {"items": [_node("node-a")]}}
    assert (await shim.post("/prioritize", json=nodes)).json() == [{"Host": "node-a", "Score": 9}]


@pytest.mark.parametrize(
    ("score", "expected"), [(None, 0), (0, 0), (4, 0), (5, 1), (55, 6), (100, 10), (250, 10)]
)
def test_scores_scale_into_zero_to_max_extender_priority(score: int | None, expected: int) -> None:
    assert scaled(score) == expected
    assert 0 <= scaled(score) <= MAX_EXTENDER_PRIORITY


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/filter", {"NodeNames": ["node-a"]}, "Pod"),
        ("/filter", {"Pod": _pod()}, "NodeNames"),
        ("/filter", {"Pod": _pod(), "Nodes": {"items": [{"spec": {}}]}}, "Nodes"),
        ("/prioritize", [], "JSON object"),
        ("/bind", {"PodName": "p", "PodNamespace": "ml"}, "Node"),
    ],
)
async def test_requests_the_scheduler_would_not_send_are_refused(
    shim: httpx.AsyncClient, api: AllocationAPI, path: str, body: Any, field: str
) -> None:
    answer = await shim.post(path, json=body)
    assert answer.status_code == 400
    assert field in answer.json()["Error"]
    assert api.reviews == []


async def test_not_json_is_refused(shim: httpx.AsyncClient) -> None:
    answer = await shim.post("/filter", content=b"{not json")
    assert answer.status_code == 400
    assert "not JSON" in answer.json()["Error"]


def test_arguments_are_read_as_go_reads_them() -> None:
    """Go's decoder matches keys case-insensitively; the scheduler sends its field names."""
    bind = BindArgs.parse({"podName": "p", "PODNAMESPACE": "ml", "PodUID": "u", "Node": "n"})
    assert bind == BindArgs("p", "ml", "u", "n")
    args = FilterArgs.parse({"pod": _pod(), "nodenames": ["a"]})
    assert args.node_names == ["a"]
    assert args.nodes is None

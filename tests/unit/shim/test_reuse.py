"""Prioritize answered from the filter's answer: the shim's filter and prioritize over an
in-process allocation API whose state version the test moves. Prioritize sends the filter's
version as ``knownStateVersion`` and reuses the filter's answer when the API says
``unchanged``; a change in between brings the new answer in the same request; another pod,
other claims or nodes the filter did not answer send no version."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import Response

from apiserver.shim.scheduling import FilterMemory
from tests.unit.shim.inprocess import REVIEWS, shim_over

NODES = ["node-a", "node-b", "node-c"]


def _pod(uid: str = "uid-1", claim: str = "trainer-gpu") -> dict[str, Any]:
    return {
        "metadata": {"name": "trainer", "namespace": "ml", "uid": uid},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]},
    }


class VersionedAPI:
    """Reviews answered from ``scores`` (node -> score, None: infeasible) at ``version``."""

    def __init__(self) -> None:
        self.version = "v1"
        self.scores: dict[str, int | None] = {"node-a": 90, "node-b": 40, "node-c": None}
        self.reviews: list[dict[str, Any]] = []
        self.unchanged: list[int] = []
        """Indexes of the reviews answered ``unchanged``."""
        self.app = FastAPI()

        @self.app.post(REVIEWS)
        async def review(request: Request) -> Response:
            body = orjson.loads(await request.body())
            self.reviews.append(body["spec"])
            if body["spec"].get("knownStateVersion") == self.version:
                self.unchanged.append(len(self.reviews) - 1)
                body["status"] = {"stateVersion": self.version, "unchanged": True}
                return Response(orjson.dumps(body), 201, media_type="application/json")
            nodes = []
            for name in body["spec"]["nodeNames"]:
                score = self.scores.get(name)
                if score is None:
                    reason = {"claim": "c", "reason": "NoCandidates", "message": "none"}
                    nodes.append({"nodeName": name, "feasible": False, "reasons": [reason]})
                else:
                    nodes.append({"nodeName": name, "feasible": True, "score": score})
            body["status"] = {"nodes": nodes, "stateVersion": self.version}
            return Response(orjson.dumps(body), 201, media_type="application/json")

    def full_reviews(self) -> list[dict[str, Any]]:
        """The reviews answered in full (not ``unchanged``)."""
        return [r for i, r in enumerate(self.reviews) if i not in self.unchanged]


@pytest.fixture
def api() -> VersionedAPI:
    return VersionedAPI()


@pytest.fixture
async def shim(api: VersionedAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with shim_over(api.app) as client:
        yield client


async def _cycle(shim: httpx.AsyncClient, pod: dict[str, Any]) -> dict[str, int]:
    """One scheduling cycle: filter over every node, prioritize over the ones that fit."""
    filtered = (await shim.post("/filter", json={"Pod": pod, "NodeNames": NODES})).json()
    fits = filtered["NodeNames"]
    answer = await shim.post("/prioritize", json={"Pod": pod, "NodeNames": fits})
    return {e["Host"]: e["Score"] for e in answer.json()}


async def test_prioritize_reuses_the_filter_answer_at_the_same_version(
    shim: httpx.AsyncClient, api: VersionedAPI
) -> None:
    scores = await _cycle(shim, _pod())
    assert scores == {"node-a": 9, "node-b": 4}
    assert len(api.reviews) == 2
    assert len(api.full_reviews()) == 1  # the filter's; prioritize was answered unchanged
    probe = api.reviews[-1]
    assert probe["nodeNames"] == ["node-a", "node-b"]
    assert probe["knownStateVersion"] == "v1"
    assert probe["answer"] == "Scores"
    assert all(r.get("answer") == "Scores" for r in api.reviews)


async def test_a_change_between_filter_and_prioritize_asks_again(
    shim: httpx.AsyncClient, api: VersionedAPI
) -> None:
    pod = _pod()
    filtered = (await shim.post("/filter", json={"Pod": pod, "NodeNames": NODES})).json()
    assert filtered["NodeNames"] == ["node-a", "node-b"]
    api.version = "v2"  # e.g. another pod's bind took node-a's devices
    api.scores["node-a"] = None
    answer = await shim.post("/prioritize", json={"Pod": pod, "NodeNames": ["node-a", "node-b"]})
    assert {e["Host"]: e["Score"] for e in answer.json()} == {"node-a": 0, "node-b": 4}
    assert len(api.reviews) == 2  # the new answer came with the one request prioritize made
    assert api.reviews[-1]["nodeNames"] == ["node-a", "node-b"]
    assert api.reviews[-1]["knownStateVersion"] == "v1"


async def test_no_reuse_for_another_pod_other_claims_or_unfiltered_nodes(
    shim: httpx.AsyncClient, api: VersionedAPI
) -> None:
    await shim.post("/filter", json={"Pod": _pod(), "NodeNames": ["node-a"]})
    for pod, nodes in (
        (_pod(uid="uid-2"), ["node-a"]),
        (_pod(claim="other-gpu"), ["node-a"]),
        (_pod(), ["node-a", "node-b"]),  # node-b was not in the filter's answer
    ):
        before = len(api.full_reviews())
        await shim.post("/prioritize", json={"Pod": pod, "NodeNames": nodes})
        assert len(api.full_reviews()) == before + 1
        assert "knownStateVersion" not in api.reviews[-1]


async def test_several_rounds_reuse_only_while_the_version_holds(
    shim: httpx.AsyncClient, api: VersionedAPI
) -> None:
    for round_ in range(4):
        api.version = f"v{round_ // 2}"  # the version moves every second cycle, after it
        await _cycle(shim, _pod(uid=f"uid-{round_}"))
    assert len(api.full_reviews()) == 4  # one per filter, none for prioritize


def test_memory_is_bounded_and_forgets_the_oldest() -> None:
    memory = FilterMemory(size=2)
    for pod in ("a", "b", "c"):
        memory.keep(pod, ["ns/c"], "v", {"node-a": {"feasible": True}})
    assert memory.recall("a", ["ns/c"], ["node-a"]) is None
    assert memory.recall("c", ["ns/c"], ["node-a"]) is not None


def test_an_answer_without_a_version_is_not_kept() -> None:
    memory = FilterMemory()
    memory.keep("a", ["ns/c"], "", {"node-a": {"feasible": True}})
    assert memory.recall("a", ["ns/c"], ["node-a"]) is None

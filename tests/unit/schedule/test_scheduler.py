"""The stand-in scheduler's side of the extender protocol: the JSON it sends (as
kube-scheduler does, in Go's field spelling) and how it reads the answers; and its choice
among the scores."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from apiserver.schedule.extender import Extender, ExtenderError
from apiserver.schedule.scheduler import best_node

POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u-1"}, "spec": {}}
NODES = [{"metadata": {"name": n}} for n in ("n1", "n2")]


def _extender(answers: dict[str, Any], sent: list[tuple[str, Any]], **kw: Any) -> Extender:
    def handle(request: httpx.Request) -> httpx.Response:
        verb = request.url.path.strip("/")
        sent.append((verb, orjson.loads(request.content)))
        status, body = answers[verb]
        return httpx.Response(status, json=body)

    return Extender("https://shim", True, transport=httpx.MockTransport(handle), **kw)


async def test_filter_sends_node_objects_and_reads_them_back() -> None:
    sent: list[tuple[str, Any]] = []
    answer = {
        "Nodes": {"items": [NODES[1]]},
        "NodeNames": None,
        "FailedNodes": {"n1": "no device"},
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }
    extender = _extender({"filter": (200, answer)}, sent)
    filtered = await extender.filter(POD, NODES)
    assert sent == [
        (
            "filter",
            {
                "Pod": POD,
                "Nodes": {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": NODES},
                "NodeNames": None,
            },
        )
    ]
    assert filtered.fits == ["n2"]
    assert filtered.failed == {"n1": "no device"}


async def test_node_cache_capable_sends_names() -> None:
    sent: list[tuple[str, Any]] = []
    extender = _extender(
        {"prioritize": (200, [{"Host": "n1", "Score": 3}, {"Host": "n2", "Score": 7}])},
        sent,
        node_cache_capable=True,
    )
    assert await extender.prioritize(POD, NODES) == {"n1": 3, "n2": 7}
    assert sent[0][1] == {"Pod": POD, "Nodes": None, "NodeNames": ["n1", "n2"]}


async def test_bind_sends_binding_args_and_raises_its_error() -> None:
    sent: list[tuple[str, Any]] = []
    extender = _extender({"bind": (200, {"Error": "attaching failed"})}, sent)
    with pytest.raises(ExtenderError, match="attaching failed"):
        await extender.bind(POD, "n2")
    assert sent == [("bind", {"PodName": "p", "PodNamespace": "ns", "PodUID": "u-1", "Node": "n2"})]


async def test_an_error_status_is_an_extender_error() -> None:
    extender = _extender({"filter": (500, {"Error": "review failed"})}, [])
    with pytest.raises(ExtenderError, match="HTTP 500"):
        await extender.filter(POD, NODES)


def test_best_node_takes_the_top_score_and_rotates_among_ties() -> None:
    assert best_node({"b": 3, "a": 9, "c": 9}, 0) == "a"
    assert best_node({"b": 3, "a": 9, "c": 9}, 1) == "c"
    assert best_node({"b": 3, "a": 9, "c": 9}, 2) == "a"
    assert best_node({"z": 1}, 5) == "z"

"""The AllocationReview answer mode: ``spec.answer`` validated (one of Allocations and Scores,
Scores not with reserve), and a node's entry in Scores mode carries feasibility, score and
reasons but no allocations; an entry with allocations is encoded once per node's kept
answer."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from apiserver.allocator import Allocator, NodeResult, Reason, SharedCaches, parse_claim
from apiserver.api.field import ErrorType
from apiserver.api.resource import AllocationReview, DeviceID, validate_allocation_review
from apiserver.pools import Node, Pools, PoolState
from apiserver.server.allocation import _Answer, _node_answer
from tests.unit.builders import pools_of, slice_obj


def _review(**spec: Any) -> AllocationReview:
    body = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "AllocationReview",
        "spec": {"claims": [{"namespace": "ml", "name": "gpu"}], "nodeNames": ["n1"], **spec},
    }
    return AllocationReview.model_validate(body)


@pytest.mark.parametrize("answer", [None, "Allocations", "Scores"])
def test_the_answer_modes_are_valid(answer: str | None) -> None:
    assert validate_allocation_review(_review(answer=answer)) == []


@pytest.mark.parametrize("answer", ["scores", "Feasibility", ""])
def test_another_answer_is_refused_naming_the_field(answer: str) -> None:
    [error] = validate_allocation_review(_review(answer=answer))
    assert error.field == "spec.answer"
    assert error.type is ErrorType.NOT_SUPPORTED


def test_scores_with_reserve_is_refused() -> None:
    [error] = validate_allocation_review(_review(answer="Scores", reserve=True))
    assert error.field == "spec.answer"
    assert error.type is ErrorType.FORBIDDEN
    assert validate_allocation_review(_review(answer="Allocations", reserve=True)) == []


class _Outcome:
    allocation = {"devices": {"results": [{"request": "r", "device": "d"}]}}
    to_attach: tuple[DeviceID, ...] = ()


class _Fabric(_Outcome):
    to_attach = (DeviceID("fabric.example.com", "fabric", "d"),)


def test_a_scores_entry_has_no_allocations() -> None:
    feasible = NodeResult("n1", True, 80, (_Outcome(),))  # type: ignore[arg-type]
    full = _node_answer(feasible)
    assert full["allocations"] == [_Outcome.allocation]
    small = _node_answer(feasible, allocations=False)
    assert small == {"nodeName": "n1", "feasible": True, "score": 80}
    infeasible = NodeResult(
        "n2", False, why=(Reason("NoCandidates", "ml/gpu", "no device", request="r"),)
    )
    assert _node_answer(infeasible, allocations=False) == _node_answer(infeasible)
    assert "reasons" in _node_answer(infeasible, allocations=False)


def test_devices_to_attach_are_listed_with_the_allocations_only() -> None:
    feasible = NodeResult("n1", True, 0, (_Outcome(), _Fabric()))  # type: ignore[arg-type]
    full = _node_answer(feasible)
    assert full["needsAttaching"] == [
        {"driver": "fabric.example.com", "pool": "fabric", "device": "d"}
    ]
    assert "needsAttaching" not in _node_answer(feasible, allocations=False)
    local = NodeResult("n2", True, 100, (_Outcome(),))  # type: ignore[arg-type]
    assert "needsAttaching" not in _node_answer(local)


def _replayed(request: str, pools: Pools, shared: SharedCaches, name: str) -> list[NodeResult]:
    allocator = Allocator(pools, CLASSES)
    shared.attach(allocator)
    claim = parse_claim(name, {"devices": {"requests": [_gpu(request)]}})
    return asyncio.run(allocator.review([claim], NODES))


def _gpu(request: str) -> dict[str, Any]:
    return {"name": request, "exactly": {"deviceClassName": "gpu", "count": 1}}


NODES = [Node(f"n{i}", {}) for i in range(3)]
CLASSES: dict[str, Any] = {"gpu": {"metadata": {"name": "gpu", "uid": "u", "resourceVersion": "1"}}}


def _entries(results: list[NodeResult]) -> list[Any]:
    return _Answer(set(), []).of(results)


def _read(entry: Any) -> dict[str, Any]:
    decoded: dict[str, Any] = orjson.loads(orjson.dumps(entry))
    return decoded


def test_an_entry_with_allocations_is_encoded_once_per_kept_answer_and_request_names() -> None:
    """Reviews replaying a node's kept answer for claims of the same request names share
    its encoded entry, which reads as the entry made anew; other request names, or the
    node's pool changed, make a new one."""
    pools = pools_of(
        *(slice_obj(n.name, [{"name": "d0"}, {"name": "d1"}], nodeName=n.name) for n in NODES)
    )
    shared = SharedCaches.for_inputs(None, pools, CLASSES)
    results = _replayed("gpu", pools, shared, "ns/a")
    first = _entries(results)
    assert [_read(e) for e in first] == [_node_answer(r) for r in results]
    again = _entries(_replayed("gpu", pools, shared, "ns/b"))
    renamed = [_read(e) for e in _entries(_replayed("other", pools, shared, "ns/c"))]
    assert all(one is two for one, two in zip(first, again, strict=True))
    for one, other in zip(map(_read, first), renamed, strict=True):
        [result] = other["allocations"][0]["devices"]["results"]
        assert result["request"] == "other"
        assert result["device"] == one["allocations"][0]["devices"]["results"][0]["device"]

    state = pools.pool(next(iter(pools.states)))
    assert state is not None
    changed = pools.updated({state.key: PoolState(state.gathered, frozenset({"d0"}))})
    shared = SharedCaches.for_inputs(shared, changed, CLASSES)
    after = {_read(e)["nodeName"]: e for e in _entries(_replayed("gpu", changed, shared, "x/d"))}
    node = state.key[1]
    before = {_read(e)["nodeName"]: e for e in first}
    assert after[node] is not before[node]
    assert _read(after[node])["allocations"][0]["devices"]["results"][0]["device"] == "d1"
    assert all(after[name] is entry for name, entry in before.items() if name != node)

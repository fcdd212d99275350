"""The AllocationReview answer mode: ``spec.answer`` validated (one of Allocations and Scores,
Scores not with reserve), and a node's entry in Scores mode carries feasibility, score and
reasons but no allocations."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.allocator import NodeResult, Reason
from apiserver.api.field import ErrorType
from apiserver.api.resource import AllocationReview, DeviceID, validate_allocation_review
from apiserver.server.allocation import _node_answer


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

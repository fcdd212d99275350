"""AllocationReview validation of ``spec.nodeNames``: each name a DNS subdomain, no name
twice, at most 5,000; every error names the entry."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.field import ErrorType
from apiserver.api.resource import AllocationReview, validate_allocation_review


def review(nodes: list[str]) -> AllocationReview:
    claim: dict[str, Any] = {"namespace": "default", "name": "c"}
    return AllocationReview.model_validate({"spec": {"claims": [claim], "nodeNames": nodes}})


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        (["node-1", "node-2"], []),
        ([f"node-{i}" for i in range(5000)], []),
        (["node-1", "Node_2"], [("spec.nodeNames[1]", ErrorType.INVALID)]),
        (["node-1", "node-2", "node-1"], [("spec.nodeNames[2]", ErrorType.DUPLICATE)]),
        (
            ["-bad-", "-bad-"],
            [
                ("spec.nodeNames[0]", ErrorType.INVALID),
                ("spec.nodeNames[1]", ErrorType.INVALID),
                ("spec.nodeNames[1]", ErrorType.DUPLICATE),
            ],
        ),
        ([f"n{i}" for i in range(5001)], [("spec.nodeNames", ErrorType.TOO_MANY)]),
    ],
)
def test_node_names(nodes: list[str], expected: list[tuple[str, ErrorType]]) -> None:
    found = [(e.field, e.type) for e in validate_allocation_review(review(nodes))]
    assert found == expected

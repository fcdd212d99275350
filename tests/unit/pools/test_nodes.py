"""Which nodes a placement reaches: node names, allNodes, and node selectors over labels."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.resource import placement
from apiserver.pools import Node, reaches, selector_matches

NODE = Node("n1", {"zone": "a", "gpus": "4"})


def term(*expressions: dict[str, Any], fields: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"matchExpressions": list(expressions)}
    if fields:
        out["matchFields"] = list(fields)
    return out


@pytest.mark.parametrize(
    ("requirement", "matches"),
    [
        ({"key": "zone", "operator": "In", "values": ["a", "b"]}, True),
        ({"key": "zone", "operator": "In", "values": ["b"]}, False),
        ({"key": "zone", "operator": "NotIn", "values": ["b"]}, True),
        ({"key": "rack", "operator": "NotIn", "values": ["b"]}, True),
        ({"key": "zone", "operator": "Exists"}, True),
        ({"key": "rack", "operator": "Exists"}, False),
        ({"key": "rack", "operator": "DoesNotExist"}, True),
        ({"key": "gpus", "operator": "Gt", "values": ["3"]}, True),
        ({"key": "gpus", "operator": "Lt", "values": ["3"]}, False),
        ({"key": "zone", "operator": "Gt", "values": ["3"]}, False),
    ],
)
def test_requirements(requirement: dict[str, Any], matches: bool) -> None:
    assert selector_matches({"nodeSelectorTerms": [term(requirement)]}, NODE) is matches


def test_terms_are_ored_requirements_anded_and_fields_name_the_node() -> None:
    zone_a = {"key": "zone", "operator": "In", "values": ["a"]}
    rack = {"key": "rack", "operator": "Exists"}
    name = {"key": "metadata.name", "operator": "In", "values": ["n1"]}
    assert not selector_matches({"nodeSelectorTerms": [term(zone_a, rack)]}, NODE)
    assert selector_matches({"nodeSelectorTerms": [term(rack), term(zone_a)]}, NODE)
    assert selector_matches({"nodeSelectorTerms": [term(fields=(name,))]}, NODE)
    assert not selector_matches({"nodeSelectorTerms": [term(fields=(name,))]}, Node("n2"))
    assert not selector_matches({"nodeSelectorTerms": [{}]}, NODE)
    assert not selector_matches({"nodeSelectorTerms": []}, NODE)


def test_placements_reach_nodes() -> None:
    assert reaches(placement({"nodeName": "n1"}), NODE)
    assert not reaches(placement({"nodeName": "n2"}), NODE)
    assert reaches(placement({"allNodes": True}), NODE)
    selector = {"nodeSelectorTerms": [term({"key": "zone", "operator": "In", "values": ["a"]})]}
    assert reaches(placement({"nodeSelector": selector}), NODE)
    assert not reaches(placement({"nodeSelector": selector}), Node("n2", {"zone": "b"}))
    assert not reaches(placement({"perDeviceNodeSelection": True}), NODE)

"""Which nodes reach a device: node-local placements, ``allNodes`` and node selectors.

A node is given as its name and labels. A core ``NodeSelector`` matches when any of its
terms does; a term matches when all of its ``matchExpressions`` hold on the labels and all
of its ``matchFields`` hold on the node's fields (``metadata.name`` only, as upstream); an
empty term matches nothing. ``Gt``/``Lt`` compare integers; a label that is not one fails.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.resource import ALL_NODES, NODE_NAME, NODE_SELECTOR, Placement


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)

    @functools.cached_property
    def key(self) -> str:
        """The name and labels as one string: what the allocator's per-node caches key on
        (a node's labels decide which devices reach it), computed once per node."""
        if not self.labels:
            return self.name
        return self.name + "\x00" + repr(sorted(self.labels.items()))


def _requirement(req: Any, values_of: Mapping[str, str]) -> bool:
    if not isinstance(req, dict):
        return False
    key, op = req.get("key"), req.get("operator")
    values = [v for v in req.get("values") or () if isinstance(v, str)]
    present = key in values_of
    value = values_of.get(str(key))
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, bound = int(str(value)), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def selector_matches(selector: Mapping[str, Any] | None, node: Node) -> bool:
    if not selector:
        return False
    fields = {"metadata.name": node.name}
    for term in selector.get("nodeSelectorTerms") or ():
        if not isinstance(term, dict):
            continue
        expressions = term.get("matchExpressions") or ()
        matched_fields = term.get("matchFields") or ()
        if not expressions and not matched_fields:
            continue
        if all(_requirement(r, node.labels) for r in expressions) and all(
            _requirement(r, fields) for r in matched_fields
        ):
            return True
    return False


def reaches(place: Placement, node: Node) -> bool:
    """Whether a slice- or device-level placement makes the device usable on ``node``."""
    if place.kind == NODE_NAME:
        return place.node_name == node.name
    if place.kind == ALL_NODES:
        return True
    if place.kind == NODE_SELECTOR:
        return selector_matches(place.node_selector, node)
    return False

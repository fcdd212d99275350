"""Core ``v1`` NodeSelector: which nodes a slice, a device or an allocation is usable on."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..base import APIModel

NodeSelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]


class NodeSelectorRequirement(APIModel):
    """A selector that contains values, a key, and an operator that relates the key and values."""

    key: str = Field(description="The label key that the selector applies to.")
    operator: NodeSelectorOperator = Field(
        description="Represents a key's relationship to a set of values: In, NotIn, Exists, DoesNotExist, Gt, Lt."
    )
    values: list[str] | None = Field(
        None,
        description="An array of string values. In and NotIn need values, Exists and DoesNotExist "
        "must have none, Gt and Lt need one integer.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class NodeSelectorTerm(APIModel):
    """The requirements of a term are ANDed."""

    match_expressions: list[NodeSelectorRequirement] | None = Field(
        None,
        description="Requirements by node labels.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    match_fields: list[NodeSelectorRequirement] | None = Field(
        None,
        description="Requirements by node fields.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class NodeSelector(APIModel):
    """The terms are ORed: a node matches if any term matches."""

    node_selector_terms: list[NodeSelectorTerm] = Field(
        description="Required. A list of node selector terms. The terms are ORed.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )

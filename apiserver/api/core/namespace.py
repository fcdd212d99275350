"""Core ``v1`` Namespace: a scope for names, ``Active`` or ``Terminating``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..base import APIModel, Time
from ..meta import KindModel

NamespacePhase = Literal["Active", "Terminating"]


class NamespaceSpec(APIModel):
    """What the namespace asks of the system."""

    finalizers: list[str] | None = Field(
        None,
        description="Finalizers is an opaque list of values that must be empty to permanently "
        "remove object from storage.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class NamespaceCondition(APIModel):
    """One aspect of the namespace's state, e.g. NamespaceDeletionContentFailure."""

    type: str = Field(description="Type of namespace controller condition.")
    status: Literal["True", "False", "Unknown"] = Field(
        description="Status of the condition, one of True, False, Unknown."
    )
    last_transition_time: Time | None = Field(
        None, description="Last time the condition transitioned from one status to another."
    )
    reason: str | None = Field(
        None, description="Unique, one-word, CamelCase reason for the condition's last transition."
    )
    message: str | None = Field(
        None, description="Human-readable message indicating details about last transition."
    )


class NamespaceStatus(APIModel):
    """The observed state of the namespace."""

    phase: NamespacePhase | None = Field(
        None,
        description="Phase is the current lifecycle phase of the namespace: Active or Terminating.",
    )
    conditions: list[NamespaceCondition] | None = Field(
        None,
        description="Represents the latest available observations of a namespace's current state.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


class Namespace(KindModel):
    """Namespace provides a scope for Names."""

    spec: NamespaceSpec | None = Field(
        None, description="Spec defines the behavior of the Namespace."
    )
    status: NamespaceStatus | None = Field(
        None, description="Status describes the current status of a Namespace."
    )

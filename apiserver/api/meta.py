"""meta.k8s.io/v1 types every kind carries: ObjectMeta, Condition and friends."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import APIModel, Time


class OwnerReference(APIModel):
    """Identifies an owning object; the garbage collector deletes dependents of deleted owners."""

    api_version: str = Field(description="API version of the referent.")
    kind: str = Field(description="Kind of the referent.")
    name: str = Field(description="Name of the referent.")
    uid: str = Field(description="UID of the referent.")
    controller: bool | None = Field(
        None, description="If true, this reference points to the managing controller."
    )
    block_owner_deletion: bool | None = Field(
        None, description="If true, the owner cannot be deleted before this reference is removed."
    )


class ManagedFieldsEntry(APIModel):
    """Which fields a field manager owns, as recorded by server-side apply and updates."""

    manager: str | None = Field(
        None, description="Identifier of the workflow managing these fields."
    )
    operation: Literal["Apply", "Update"] | None = Field(
        None, description="The operation that led to this entry: Apply or Update."
    )
    api_version: str | None = Field(
        None, description="Version of the resource these fields belong to."
    )
    time: Time | None = Field(
        None, description="When these fields were last changed by this manager."
    )
    fields_type: Literal["FieldsV1"] | None = Field(
        None, description="Format of fieldsV1; only FieldsV1."
    )
    fields_v1: dict[str, Any] | None = Field(
        None, alias="fieldsV1", description="The set of owned fields, in FieldsV1 format."
    )
    subresource: str | None = Field(None, description="The subresource the write went to, if any.")


class ObjectMeta(APIModel):
    """Standard object metadata."""

    name: str | None = Field(
        None,
        description="Name must be unique within a namespace (or cluster for cluster-scoped kinds).",
    )
    generate_name: str | None = Field(
        None,
        description="Optional prefix the server uses to generate a unique name if name is empty.",
    )
    namespace: str | None = Field(
        None, description="Namespace of a namespaced object; empty for cluster-scoped kinds."
    )
    self_link: str | None = Field(None, description="Deprecated; not set by this server.")
    uid: str | None = Field(None, description="Unique identifier set by the server on creation.")
    resource_version: str | None = Field(
        None, description="Opaque version of this object, for optimistic concurrency and watches."
    )
    generation: int | None = Field(
        None, description="Sequence number of the desired state (spec); set by the server."
    )
    creation_timestamp: Time | None = Field(
        None, description="When the object was created; set by the server."
    )
    deletion_timestamp: Time | None = Field(
        None,
        description="When deletion was requested; the object goes once its finalizers are removed.",
    )
    deletion_grace_period_seconds: int | None = Field(
        None, description="Grace period of a requested deletion."
    )
    labels: dict[str, str] | None = Field(
        None, description="Map of string keys and values for selecting objects."
    )
    annotations: dict[str, str] | None = Field(
        None, description="Unstructured key/value data for tools."
    )
    owner_references: list[OwnerReference] | None = Field(
        None,
        description="Objects this object depends on.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"]},
    )
    finalizers: list[str] | None = Field(
        None,
        description="Must be empty before the object is deleted from storage.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    managed_fields: list[ManagedFieldsEntry] | None = Field(
        None, description="Which field managers own which fields (server-side apply)."
    )


class Condition(APIModel):
    """One aspect of the current state of an object."""

    type: str = Field(description="Type of condition in CamelCase or in foo.example.com/CamelCase.")
    status: Literal["True", "False", "Unknown"] = Field(
        description="Status of the condition: True, False or Unknown."
    )
    observed_generation: int | None = Field(
        None, description="The metadata.generation the condition was set for."
    )
    last_transition_time: Time = Field(description="Last time the condition changed status.")
    reason: str = Field(description="Programmatic identifier in CamelCase for the last transition.")
    message: str = Field(
        "", description="Human-readable message about the transition; may be empty."
    )


CONDITION_MESSAGE_WRITTEN_MAX = 1024
"""The longest message the server's own controllers write into a condition (and into the
Event about the same problem); longer ones are cut. What the API accepts from anyone is
``metavalidation.CONDITION_MESSAGE_MAX``."""

CONDITIONS_SCHEMA_EXTRA: dict[str, Any] = {
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
}


class KindModel(APIModel):
    """A top-level object: its type metadata and standard object metadata."""

    api_version: str | None = Field(
        None,
        description="APIVersion defines the versioned schema of this representation of an object.",
    )
    kind: str | None = Field(
        None, description="Kind is a string value representing the REST resource."
    )
    metadata: ObjectMeta = Field(
        default_factory=ObjectMeta, description="Standard object metadata."
    )


class Preconditions(APIModel):
    """Must be fulfilled before a deletion is carried out."""

    uid: str | None = Field(None, description="Specifies the target UID.")
    resource_version: str | None = Field(None, description="Specifies the target ResourceVersion.")


class DeleteOptions(APIModel):
    """The optional body of a DELETE request."""

    api_version: str | None = None
    kind: str | None = None
    grace_period_seconds: int | None = Field(None, description="Ignored: deletion is immediate.")
    preconditions: Preconditions | None = None
    orphan_dependents: bool | None = Field(None, description="Deprecated; use propagationPolicy.")
    propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None
    dry_run: list[str] | None = None

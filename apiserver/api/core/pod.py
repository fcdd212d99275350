"""Core ``v1`` Pod, as far as this server reads it: where it runs, what it claims, its phase.

The server does not run pods; it stores them so that kubectl (``kubectl describe node``
lists a node's pods) and the allocation and binding flow have them on a laptop. The fields
the server or kubectl's printers read are typed (node name, scheduler, containers' names and
resources, resource claims, tolerations, phase, conditions, container statuses); every other
field of the upstream Pod is kept as written, so real manifests are accepted whole.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from ..base import APIModel, Quantity, Time
from ..meta import KindModel

PodPhase = Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"]


class _Open(APIModel):
    """A part of the upstream Pod of which only some fields are typed here; the others are
    kept as written."""

    model_config = ConfigDict(extra="allow")


class ResourceClaimReference(APIModel):
    """A claim of the pod that a container uses."""

    name: str = Field(description="The name of one entry in pod.spec.resourceClaims.")
    request: str | None = Field(
        None, description="If set, only the result of this request of the claim is used."
    )


class ResourceRequirements(_Open):
    """Compute resources of a container."""

    requests: dict[str, Quantity] | None = Field(
        None, description="The minimum amount of compute resources required."
    )
    limits: dict[str, Quantity] | None = Field(
        None, description="The maximum amount of compute resources allowed."
    )
    claims: list[ResourceClaimReference] | None = Field(
        None,
        description="The pod's ResourceClaims this container uses.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )


class Container(_Open):
    """A container of the pod (only the fields this server reads are typed)."""

    name: str = Field(description="Name of the container, a DNS label unique within the pod.")
    image: str | None = Field(None, description="Container image name.")
    resources: ResourceRequirements | None = Field(
        None, description="Compute resources required by this container."
    )


class PodResourceClaim(APIModel):
    """A ResourceClaim the pod uses, by name or made from a template."""

    name: str = Field(description="Uniquely identifies this resource claim inside the pod.")
    resource_claim_name: str | None = Field(
        None, description="The name of a ResourceClaim in the pod's namespace."
    )
    resource_claim_template_name: str | None = Field(
        None, description="The name of a ResourceClaimTemplate to make the pod's claim from."
    )


class Toleration(APIModel):
    """The pod tolerates a node taint that matches it."""

    key: str | None = Field(None, description="The taint key; empty matches all keys.")
    operator: Literal["Exists", "Equal"] | None = Field(
        None, description="Exists or Equal (the default)."
    )
    value: str | None = Field(None, description="The taint value the toleration matches.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] | None = Field(
        None, description="The taint effect to match; empty matches all effects."
    )
    toleration_seconds: int | None = Field(
        None, description="How long a NoExecute taint is tolerated; unset is forever."
    )


class PodSpec(_Open):
    """The desired behavior of the pod (only the fields this server reads are typed)."""

    containers: list[Container] = Field(
        description="The containers of the pod; at least one.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    init_containers: list[Container] | None = Field(
        None,
        description="Containers run in order before the app containers start.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    node_name: str | None = Field(
        None, description="The node the pod is bound to; set by the scheduler's binding."
    )
    scheduler_name: str | None = Field(
        None, description="The scheduler that places the pod; default-scheduler if unset."
    )
    node_selector: dict[str, str] | None = Field(
        None, description="Labels a node must have for the pod to fit on it."
    )
    tolerations: list[Toleration] | None = Field(
        None,
        description="The pod's tolerations of node taints.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    resource_claims: list[PodResourceClaim] | None = Field(
        None,
        description="ResourceClaims the pod's containers may use.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )


class PodCondition(_Open):
    """One aspect of the pod's state, e.g. PodScheduled or Ready."""

    type: str = Field(description="Type of the condition.")
    status: Literal["True", "False", "Unknown"] = Field(
        description="Status of the condition: True, False or Unknown."
    )
    last_transition_time: Time | None = Field(
        None, description="Last time the condition transitioned."
    )
    reason: str | None = Field(None, description="Why the condition last transitioned.")
    message: str | None = Field(None, description="Details of the last transition.")


class ContainerStatus(_Open):
    """The state of one container (only the fields kubectl prints are typed)."""

    name: str = Field(description="The container's name.")
    ready: bool | None = Field(None, description="Whether the container passes its readiness.")
    restart_count: int | None = Field(None, description="How often the container restarted.")


class PodStatus(_Open):
    """The observed state of the pod (only the fields this server reads are typed)."""

    phase: PodPhase | None = Field(
        None, description="Pending, Running, Succeeded, Failed or Unknown."
    )
    conditions: list[PodCondition] | None = Field(
        None,
        description="Current service state of the pod.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    reason: str | None = Field(None, description="A brief reason the pod is in this state.")
    nominated_node_name: str | None = Field(
        None, description="The node the scheduler expects the pod to run on after preemption."
    )
    pod_ip: str | None = Field(None, alias="podIP", description="The IP address of the pod.")
    container_statuses: list[ContainerStatus] | None = Field(
        None,
        description="One status per container.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class Pod(KindModel):
    """A group of containers that runs on one node."""

    spec: PodSpec = Field(description="Specification of the desired behavior of the pod.")
    status: PodStatus | None = Field(None, description="Most recently observed status of the pod.")

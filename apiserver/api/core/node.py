"""Core ``v1`` Node: what kubectl and a scheduler read about a node.

The spec carries scheduling facts (``unschedulable``, ``taints``) and identifiers the server
passes through without interpreting (``providerID``, ``podCIDR(s)``); the status is what a
kubelet reports (conditions, addresses, capacity, allocatable, system info).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..base import APIModel, Quantity, Time
from ..meta import KindModel

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
ConditionStatus = Literal["True", "False", "Unknown"]


class Taint(APIModel):
    """A taint on a node: pods that do not tolerate it are kept off (or evicted from) the node."""

    key: str = Field(description="The taint key to be applied to a node. Must be a label name.")
    value: str | None = Field(
        None, description="The taint value corresponding to the taint key. Must be a label value."
    )
    effect: TaintEffect = Field(
        description="The effect of the taint on pods that do not tolerate it: NoSchedule, "
        "PreferNoSchedule or NoExecute."
    )
    time_added: Time | None = Field(
        None, description="The time at which the taint was added; only for NoExecute taints."
    )


class NodeSpec(APIModel):
    """How the node may be used."""

    pod_cidr: str | None = Field(
        None,
        alias="podCIDR",
        description="The pod IP range assigned to the node; the same as podCIDRs[0].",
    )
    pod_cidrs: list[str] | None = Field(
        None,
        alias="podCIDRs",
        description="The pod IP ranges assigned to the node, at most one per IP family.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    provider_id: str | None = Field(
        None,
        alias="providerID",
        description="ID of the node assigned by the cloud provider: <ProviderName>://<ProviderSpecificNodeID>.",
    )
    unschedulable: bool | None = Field(
        None,
        description="Unschedulable controls node schedulability of new pods. By default, a node "
        "is schedulable.",
    )
    taints: list[Taint] | None = Field(
        None,
        description="If specified, the node's taints.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class NodeCondition(APIModel):
    """One aspect of the node's state, e.g. Ready, MemoryPressure or DiskPressure."""

    type: str = Field(description="Type of node condition.")
    status: ConditionStatus = Field(description="Status of the condition: True, False or Unknown.")
    last_heartbeat_time: Time | None = Field(
        None, description="Last time we got an update on a given condition."
    )
    last_transition_time: Time | None = Field(
        None, description="Last time the condition transitioned from one status to another."
    )
    reason: str | None = Field(
        None, description="(brief) reason for the condition's last transition."
    )
    message: str | None = Field(
        None, description="Human readable message indicating details about last transition."
    )


class NodeAddress(APIModel):
    """An address of the node."""

    type: str = Field(
        description="Node address type: Hostname, ExternalIP, InternalIP, ExternalDNS or InternalDNS."
    )
    address: str = Field(description="The node address.")


class NodeSwapStatus(APIModel):
    """Swap memory of the node."""

    capacity: int | None = Field(None, description="Total amount of swap memory in bytes.")


class NodeSystemInfo(APIModel):
    """Identifiers and versions the kubelet reports; passed through as written."""

    machine_id: str | None = Field(
        None, alias="machineID", description="MachineID reported by the node."
    )
    system_uuid: str | None = Field(
        None, alias="systemUUID", description="SystemUUID reported by the node."
    )
    boot_id: str | None = Field(None, alias="bootID", description="Boot ID reported by the node.")
    kernel_version: str | None = Field(
        None, description="Kernel Version reported by the node from 'uname -r'."
    )
    os_image: str | None = Field(
        None, alias="osImage", description="OS Image reported by the node from /etc/os-release."
    )
    container_runtime_version: str | None = Field(
        None, description="ContainerRuntime Version reported by the node, e.g. containerd://1.7.2."
    )
    kubelet_version: str | None = Field(None, description="Kubelet Version reported by the node.")
    kube_proxy_version: str | None = Field(
        None, description="Deprecated: KubeProxy Version reported by the node."
    )
    operating_system: str | None = Field(
        None, description="The Operating System reported by the node."
    )
    architecture: str | None = Field(None, description="The Architecture reported by the node.")
    swap: NodeSwapStatus | None = Field(None, description="Swap Info reported by the node.")


class NodeStatus(APIModel):
    """The most recently observed state of the node, written by its kubelet."""

    capacity: dict[str, Quantity] | None = Field(
        None, description="Capacity represents the total resources of a node."
    )
    allocatable: dict[str, Quantity] | None = Field(
        None,
        description="Allocatable represents the resources of a node that are available for "
        "scheduling. Defaults to Capacity.",
    )
    conditions: list[NodeCondition] | None = Field(
        None,
        description="Conditions is an array of current observed node conditions.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    addresses: list[NodeAddress] | None = Field(
        None,
        description="List of addresses reachable to the node (several of one type for dual-stack).",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    node_info: NodeSystemInfo | None = Field(
        None, description="Set of ids/uuids to uniquely identify the node."
    )


class Node(KindModel):
    """A worker node in Kubernetes."""

    spec: NodeSpec | None = Field(None, description="Spec defines the behavior of a node.")
    status: NodeStatus | None = Field(
        None, description="Most recently observed status of the node."
    )

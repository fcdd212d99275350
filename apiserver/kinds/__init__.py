"""One strategy per served kind. Adding a kind: a types module, a validation module, a strategy here."""

from __future__ import annotations

from typing import Any

from ..api.resource import DRA_GROUP
from ..machinery import Strategy
from .allocationreview import AllocationReviewStrategy
from .customresourcedefinition import CustomResourceDefinitionStrategy
from .device import DeviceStrategy
from .deviceclass import DeviceClassStrategy
from .devicereservation import DeviceReservationStrategy
from .devicetaintrule import DeviceTaintRuleStrategy
from .event import EventStrategy
from .namespace import NamespaceStrategy, SystemNamespaces
from .node import NodeStrategy
from .pod import PodStrategy
from .rbac import (
    ClusterRoleBindingStrategy,
    ClusterRoleStrategy,
    RoleBindingStrategy,
    RoleStrategy,
)
from .resourceclaim import ResourceClaimStrategy
from .resourceclaimtemplate import ResourceClaimTemplateStrategy
from .resourcepool import ResourcePoolStrategy
from .resourcepoolstatusrequest import ResourcePoolStatusRequestStrategy
from .resourcepoolstatusrequest_v1alpha3 import ResourcePoolStatusRequestV1alpha3Strategy
from .resourceslice import ResourceSliceStrategy
from .resourceslicepatch import ResourceSlicePatchStrategy

__all__ = ["SystemNamespaces", "standalone_strategies", "strategies"]


def strategies(group: str = DRA_GROUP, *, standalone: bool = True) -> list[Strategy[Any]]:
    """Every kind this server serves: ours in ``group`` (the computed, read-only Device and
    ResourcePool kinds among them, served over the device view and the live pool view rather
    than the store), and in standalone mode the core kinds a cluster would otherwise serve
    (they keep their upstream groups)."""
    ours = [
        *own_strategies(group),
        DeviceStrategy.for_group(group),
        ResourcePoolStrategy.for_group(group),
    ]
    return ours + (standalone_strategies() if standalone else [])


def own_strategies(group: str = DRA_GROUP) -> list[Strategy[Any]]:
    """Our kinds that live in our store (or are answered at once), in both modes; a kind
    served in two versions is listed once per version (the storage version first)."""
    return [
        ResourceSlicePatchStrategy.for_group(group),
        ResourcePoolStatusRequestStrategy.for_group(group),
        ResourcePoolStatusRequestV1alpha3Strategy.for_group(group),
        DeviceReservationStrategy.for_group(group),
        AllocationReviewStrategy.for_group(group),
    ]


def standalone_strategies() -> list[Strategy[Any]]:
    """Kinds served only standalone: core v1 Events, Namespaces, Nodes and Pods, the DRA v1
    kinds (DeviceTaintRule among them), RBAC and the (always empty) CustomResourceDefinition list kubectl reads.
    (``SystemNamespaces`` creates the namespaces a cluster starts with.)"""
    return [
        EventStrategy.core(),
        NamespaceStrategy.core(),
        NodeStrategy.core(),
        PodStrategy.core(),
        DeviceClassStrategy.upstream(),
        ResourceClaimStrategy.upstream(),
        ResourceClaimTemplateStrategy.upstream(),
        ResourceSliceStrategy.upstream(),
        DeviceTaintRuleStrategy.upstream(),
        RoleStrategy.upstream(),
        ClusterRoleStrategy.upstream(),
        RoleBindingStrategy.upstream(),
        ClusterRoleBindingStrategy.upstream(),
        CustomResourceDefinitionStrategy.upstream(),
    ]

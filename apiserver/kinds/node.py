"""Core ``v1`` Node (standalone mode): cluster-scoped, short name ``no``, status subresource.

Printed like kubectl prints nodes: NAME, STATUS (``Ready``/``NotReady`` from the Ready
condition, ``Unknown`` without one, ``,SchedulingDisabled`` when cordoned), ROLES (from
``node-role.kubernetes.io/<role>`` labels), AGE, VERSION; ``-o wide`` adds the addresses,
OS image, kernel and container runtime. As in Kubernetes, a node is registered together with
its status (a kubelet creates it that way), so a create keeps the status it carries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from ..api.core import Node, validate_node, validate_node_status
from ..api.field import FieldError
from ..machinery import AGE_COLUMN, NAME_COLUMN, Column, FieldGetter, Strategy, path
from .event import CORE_GROUP

ROLE_LABEL_PREFIX = "node-role.kubernetes.io/"
LEGACY_ROLE_LABEL = "kubernetes.io/role"
NONE = "<none>"


def node_status(obj: dict[str, Any]) -> str:
    """``Ready``, ``NotReady`` or ``Unknown`` (no Ready condition), then
    ``,SchedulingDisabled`` when the node is unschedulable."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"), None)
    parts = [
        "Unknown" if ready is None else "Ready" if ready.get("status") == "True" else "NotReady"
    ]
    if (obj.get("spec") or {}).get("unschedulable") is True:
        parts.append("SchedulingDisabled")
    return ",".join(parts)


def node_roles(obj: dict[str, Any]) -> str:
    """The roles named by ``node-role.kubernetes.io/<role>`` labels (and the legacy
    ``kubernetes.io/role`` label's value), sorted and comma-separated; ``<none>`` if none."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    roles = {key[len(ROLE_LABEL_PREFIX) :] for key in labels if key.startswith(ROLE_LABEL_PREFIX)}
    legacy = labels.get(LEGACY_ROLE_LABEL)
    if legacy:
        roles.add(legacy)
    roles.discard("")
    return ",".join(sorted(roles)) or NONE


def _address(kind: str) -> Callable[[dict[str, Any]], str]:
    def get(obj: dict[str, Any]) -> str:
        addresses = (obj.get("status") or {}).get("addresses") or []
        found = [
            str(a.get("address"))
            for a in addresses
            if isinstance(a, dict) and a.get("type") == kind and a.get("address")
        ]
        return ",".join(found) or NONE

    return get


def _info(name: str) -> Callable[[dict[str, Any]], str]:
    get = path("status", "nodeInfo", name)

    def value(obj: dict[str, Any]) -> str:
        found = get(obj)
        return found if isinstance(found, str) and found else "<unknown>"

    return value


def _unschedulable(obj: dict[str, Any]) -> str:
    """``spec.unschedulable`` as a field selector sees it: ``true`` or ``false``."""
    return "true" if path("spec", "unschedulable")(obj) is True else "false"


class NodeStrategy(Strategy[Node]):
    model = Node
    version = "v1"
    kind = "Node"
    plural = "nodes"
    singular = "node"
    short_names = ("no",)
    has_status = True
    status_on_create = True
    columns: ClassVar[tuple[Column, ...]] = (
        Column("Status", "string", node_status, "The condition of the node."),
        Column("Roles", "string", node_roles, "The roles of the node."),
    )
    version_column: ClassVar[Column] = Column(
        "Version", "string", path("status", "nodeInfo", "kubeletVersion"), "Kubelet Version."
    )
    wide_columns: ClassVar[tuple[Column, ...]] = (
        Column("Internal-IP", "string", _address("InternalIP"), "Internal IP of the node.", 1),
        Column("External-IP", "string", _address("ExternalIP"), "External IP of the node.", 1),
        Column("OS-Image", "string", _info("osImage"), "OS image reported by the node.", 1),
        Column("Kernel-Version", "string", _info("kernelVersion"), "Kernel version.", 1),
        Column(
            "Container-Runtime",
            "string",
            _info("containerRuntimeVersion"),
            "Container runtime version.",
            1,
        ),
    )
    extra_field_getters: ClassVar[dict[str, FieldGetter]] = {
        "spec.unschedulable": _unschedulable,
    }

    @classmethod
    def core(cls) -> NodeStrategy:
        return cls(CORE_GROUP)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        _sync_pod_cidrs(obj)
        _default_node_info(obj)

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        _sync_pod_cidrs(obj)

    def prepare_for_status_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        _default_node_info(obj)

    def validate(self, obj: Node) -> list[FieldError]:
        return validate_node(obj) + validate_node_status(obj)

    def validate_update(self, new: Node, old: Node) -> list[FieldError]:
        return validate_node(new, old)

    def validate_status(self, obj: Node) -> list[FieldError]:
        return validate_node_status(obj)

    def table_columns(self) -> tuple[Column, ...]:
        return (NAME_COLUMN, *self.columns, AGE_COLUMN, self.version_column, *self.wide_columns)


NODE_INFO_FIELDS = (
    "machineID",
    "systemUUID",
    "bootID",
    "kernelVersion",
    "osImage",
    "containerRuntimeVersion",
    "kubeletVersion",
    "kubeProxyVersion",
    "operatingSystem",
    "architecture",
)
"""The string fields of ``status.nodeInfo``: Kubernetes writes every one of them, empty
when unknown (they are not ``omitempty``), and typed clients require them."""


def _default_node_info(obj: dict[str, Any]) -> None:
    status = obj.setdefault("status", {})
    if not isinstance(status, dict):
        return
    info = status.setdefault("nodeInfo", {})
    if isinstance(info, dict):
        for name in NODE_INFO_FIELDS:
            info.setdefault(name, "")


def _sync_pod_cidrs(obj: dict[str, Any]) -> None:
    """``podCIDR`` is ``podCIDRs[0]``: either one given sets the other (as the v1 API
    converts them). Tolerates ill-typed input (validation reports it)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    cidrs, cidr = spec.get("podCIDRs"), spec.get("podCIDR")
    if isinstance(cidrs, list) and cidrs and isinstance(cidrs[0], str) and not cidr:
        spec["podCIDR"] = cidrs[0]
    elif isinstance(cidr, str) and cidr and not cidrs:
        spec["podCIDRs"] = [cidr]

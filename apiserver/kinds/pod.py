"""Core ``v1`` Pod (standalone mode): namespaced, short name ``po``, status subresource.

A pod starts ``Pending`` (as in Kubernetes, the create sets the phase). Printed like kubectl
prints pods: NAME, READY (ready containers / containers), STATUS (a container's waiting or
terminated reason, else the pod's reason or phase; ``Terminating`` once deleted), RESTARTS,
AGE; ``-o wide`` adds IP, NODE, NOMINATED NODE and READINESS GATES. ``pods/binding`` binds a
pod to a node as a scheduler does: a ``v1`` Binding sets ``spec.nodeName`` once (409 if the
pod is bound already or being deleted). Field selectors are
those kubectl and schedulers use: ``spec.nodeName`` (empty for an unscheduled pod),
``status.phase``, ``spec.schedulerName`` and a few more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from ..api import KindModel, dns1123_subdomain_errors, field
from ..api.core import Binding, Pod, validate_pod
from ..api.field import FieldError
from ..machinery import Action, Column, FieldGetter, Strategy, errors, path, string_at
from .event import CORE_GROUP

NONE = "<none>"


def _statuses(obj: dict[str, Any]) -> list[dict[str, Any]]:
    found = (obj.get("status") or {}).get("containerStatuses") or []
    return [s for s in found if isinstance(s, dict)]


def pod_ready(obj: dict[str, Any]) -> str:
    containers = (obj.get("spec") or {}).get("containers") or []
    ready = sum(1 for s in _statuses(obj) if s.get("ready") is True)
    return f"{ready}/{len(containers)}"


def pod_status(obj: dict[str, Any]) -> str:
    """What kubectl's STATUS column says, in its main cases."""
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    status = obj.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for container in _statuses(obj):
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting") or {}, state.get("terminated") or {}
        if waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated.get("reason"):
            reason = terminated["reason"]
    return str(reason)


def pod_restarts(obj: dict[str, Any]) -> int:
    return sum(int(s.get("restartCount") or 0) for s in _statuses(obj))


def _or_none(*keys: str) -> Callable[[dict[str, Any]], Any]:
    get = path(*keys)
    return lambda obj: get(obj) or NONE


class PodBinding:
    """``pods/binding``: the target node becomes the pod's ``spec.nodeName``."""

    subresource: str = "binding"
    group_version: str = "v1"
    kind: str = "Binding"
    model: type[KindModel] = Binding

    def validate(self, body: Binding) -> list[FieldError]:
        target = body.target
        if target.kind not in (None, "", "Node"):
            return [field.not_supported("target.kind", target.kind, ["Node"])]
        if not target.name:
            return [field.required("target.name")]
        return [
            field.invalid("target.name", target.name, e)
            for e in dns1123_subdomain_errors(target.name)
        ]

    def apply(self, parent: dict[str, Any], body: Binding) -> dict[str, Any]:
        meta, spec = parent["metadata"], parent.setdefault("spec", {})
        name = meta["name"]
        if meta.get("deletionTimestamp"):
            raise errors.conflict(
                "pods", "", name, "pod is being deleted, cannot be assigned to a host"
            )
        if spec.get("nodeName"):
            raise errors.conflict(
                "pods", "", name, f'pod {name} is already assigned to node "{spec["nodeName"]}"'
            )
        spec["nodeName"] = body.target.name
        return parent


class PodStrategy(Strategy[Pod]):
    model = Pod
    version = "v1"
    kind = "Pod"
    plural = "pods"
    singular = "pod"
    namespaced = True
    short_names = ("po",)
    categories = ("all",)
    has_status = True
    actions: ClassVar[tuple[Action, ...]] = (PodBinding(),)
    columns: ClassVar[tuple[Column, ...]] = (
        Column("Ready", "string", pod_ready, "Ready containers of all containers."),
        Column("Status", "string", pod_status, "The aggregate status of the containers."),
        Column("Restarts", "integer", pod_restarts, "Restarts of the containers."),
    )
    wide_columns: ClassVar[tuple[Column, ...]] = (
        Column("IP", "string", _or_none("status", "podIP"), "IP address of the pod.", 1),
        Column("Node", "string", _or_none("spec", "nodeName"), "The node of the pod.", 1),
        Column(
            "Nominated Node",
            "string",
            _or_none("status", "nominatedNodeName"),
            "The node the pod is expected on after preemption.",
            1,
        ),
        Column("Readiness Gates", "string", lambda _obj: NONE, "Pod readiness gates.", 1),
    )
    extra_field_getters: ClassVar[dict[str, FieldGetter]] = {
        "spec.nodeName": string_at("spec", "nodeName"),
        "spec.schedulerName": string_at("spec", "schedulerName"),
        "spec.restartPolicy": string_at("spec", "restartPolicy"),
        "spec.serviceAccountName": string_at("spec", "serviceAccountName"),
        "status.phase": string_at("status", "phase"),
        "status.podIP": string_at("status", "podIP"),
        "status.nominatedNodeName": string_at("status", "nominatedNodeName"),
    }

    @classmethod
    def core(cls) -> PodStrategy:
        return cls(CORE_GROUP)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        obj["status"] = {"phase": "Pending"}

    def validate(self, obj: Pod) -> list[FieldError]:
        return validate_pod(obj)

    def validate_update(self, new: Pod, old: Pod) -> list[FieldError]:
        return validate_pod(new, old)

    def table_columns(self) -> tuple[Column, ...]:
        return (*super().table_columns(), *self.wide_columns)

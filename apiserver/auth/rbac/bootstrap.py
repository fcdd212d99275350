"""The bootstrap policy a standalone server starts with, and how it reconciles stored objects.

As kube-apiserver's RBAC bootstrap: ``cluster-admin`` (everything) bound to
``system:masters``; the user-facing ``admin``, ``edit`` and ``view`` roles aggregated by the
``rbac.authorization.k8s.io/aggregate-to-*`` labels, with ``system:aggregate-to-*`` roles
holding the rules for the kinds this server serves; ``system:basic-user`` (the self reviews),
``system:discovery`` and ``system:public-info-viewer`` (the non-resource URLs) bound to
``system:authenticated`` (the last also to ``system:unauthenticated``).

``dra-scheduler-shim`` holds exactly the calls the scheduler shim makes (read a pod and bind
it, read and watch claims and write their status, ask AllocationReview and reserve through
it, which is ``create`` on devicereservations, look devices up, release its reservation,
and check a caller's bearer token with a TokenReview); it is bound to no one.

ResourcePoolStatusRequests are left out of the aggregated roles on purpose: KEP-5677 keeps
them out of admin/edit/view (they expose infrastructure); grant them explicitly, e.g. with
the KEP's ``pool-status-reader`` ClusterRole. The computed ResourcePools (the same counts,
read-only) are in ``view`` as the computed Devices are: both are cluster-scoped, so only a
ClusterRoleBinding to ``view`` (or ``edit``/``admin``) grants them, and such a binding can
already read every ResourceSlice and every ResourceClaim the counts are made of; a
RoleBinding in one namespace grants neither.

Reconciling (``reconcile_role``/``reconcile_binding``): an object that is missing is
created; one that carries ``rbac.authorization.kubernetes.io/autoupdate: "true"`` gets back
whatever labels, rules, aggregation selectors or subjects of the bootstrap version it lacks;
anything else an administrator changed is kept.
"""

from __future__ import annotations

import copy
from typing import Any

from ...api.rbac import RBAC_GROUP, RBAC_VERSION
from ...machinery.user import AUTHENTICATED, MASTERS, UNAUTHENTICATED
from ...toolkit import JSON

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAPPING = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-{}"
MONITORING = "system:monitoring"
SCHEDULER_SHIM = "dra-scheduler-shim"
"""What the scheduler shim does and nothing more; bind it to the shim's identity."""
READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
DRA_GROUP = "resource.k8s.io"
API_VERSION = f"{RBAC_GROUP}/{RBAC_VERSION}"


def _meta(name: str, labels: dict[str, str] | None = None) -> JSON:
    return {
        "name": name,
        "labels": {**BOOTSTRAPPING, **(labels or {})},
        "annotations": {AUTOUPDATE: "true"},
    }


def _rule(verbs: list[str], groups: list[str], resources: list[str]) -> JSON:
    return {"verbs": verbs, "apiGroups": groups, "resources": resources}


def _urls(verbs: list[str], urls: list[str]) -> JSON:
    return {"verbs": verbs, "nonResourceURLs": urls}


def cluster_role(
    name: str,
    rules: list[JSON],
    *,
    labels: dict[str, str] | None = None,
    aggregate_from: str | None = None,
) -> JSON:
    role: JSON = {
        "apiVersion": API_VERSION,
        "kind": "ClusterRole",
        "metadata": _meta(name, labels),
        "rules": rules,
    }
    if aggregate_from is not None:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [{"matchLabels": {AGGREGATE_TO.format(aggregate_from): "true"}}]
        }
    return role


def cluster_role_binding(name: str, role: str, groups: list[str]) -> JSON:
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": _meta(name),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": g} for g in groups],
    }


def cluster_roles(group: str) -> list[JSON]:
    """The bootstrap ClusterRoles; ``group`` is where this server's own kinds are served."""
    return [*_user_facing_roles(group), *_system_roles(), *_component_roles(group)]


def _user_facing_roles(group: str) -> list[JSON]:
    """cluster-admin, the aggregated admin/edit/view roles and what this server adds to them."""
    ours = ["resourceslicepatches", "devices", "resourcepools"]
    claims = ["resourceclaims", "resourceclaimtemplates"]
    return [
        cluster_role(
            "cluster-admin",
            [_rule(["*"], ["*"], ["*"]), _urls(["*"], ["*"])],
        ),
        cluster_role("admin", [], aggregate_from="admin"),
        cluster_role(
            "edit", [], labels={AGGREGATE_TO.format("admin"): "true"}, aggregate_from="edit"
        ),
        cluster_role(
            "view", [], labels={AGGREGATE_TO.format("edit"): "true"}, aggregate_from="view"
        ),
        cluster_role(
            "system:aggregate-to-admin",
            [_rule([*READ, *WRITE], [RBAC_GROUP], ["roles", "rolebindings"])],
            labels={AGGREGATE_TO.format("admin"): "true"},
        ),
        cluster_role(
            "system:aggregate-to-edit",
            [
                _rule(WRITE, [DRA_GROUP], claims),
                _rule(WRITE, [group], ["resourceslicepatches"]),
            ],
            labels={AGGREGATE_TO.format("edit"): "true"},
        ),
        cluster_role(
            "system:aggregate-to-view",
            [
                _rule(
                    READ,
                    [DRA_GROUP],
                    [*claims, "resourceclaims/status", "deviceclasses", "resourceslices"],
                ),
                _rule(READ, [group], [*ours, "resourceslicepatches/status"]),
                _rule(READ, [""], ["events"]),
            ],
            labels={AGGREGATE_TO.format("view"): "true"},
        ),
    ]


def _system_roles() -> list[JSON]:
    """The system roles for self-reviews and for the discovery, health and metrics URLs."""
    return [
        cluster_role(
            "system:basic-user",
            [
                _rule(
                    ["create"],
                    ["authorization.k8s.io"],
                    ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                _rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
            ],
        ),
        cluster_role(
            "system:discovery",
            [
                _urls(
                    ["get"],
                    [
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                        "/healthz",
                        "/livez",
                        "/openapi",
                        "/openapi/*",
                        "/readyz",
                        "/version",
                        "/version/",
                    ],
                )
            ],
        ),
        cluster_role(
            "system:public-info-viewer",
            [_urls(["get"], ["/healthz", "/livez", "/readyz", "/version", "/version/"])],
        ),
        cluster_role(
            "system:monitoring",
            [
                _urls(
                    ["get"],
                    [
                        "/healthz",
                        "/healthz/*",
                        "/livez",
                        "/livez/*",
                        "/metrics",
                        "/readyz",
                        "/readyz/*",
                    ],
                )
            ],
        ),
    ]


def _component_roles(group: str) -> list[JSON]:
    """The roles of the components that call this server: the scheduler shim, delegated auth."""
    return [
        cluster_role(
            SCHEDULER_SHIM,
            [
                # The order and the rules of manifests/components/scheduler-shim: the
                # calls apiserver/shim makes, no more.
                _rule(["get"], [""], ["pods"]),
                _rule(["create"], [""], ["pods/binding"]),
                _rule(READ, [DRA_GROUP], ["resourceclaims"]),
                _rule(["update"], [DRA_GROUP], ["resourceclaims/status"]),
                _rule(["create"], [group], ["allocationreviews"]),
                _rule(["create", "delete"], [group], ["devicereservations"]),
                _rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
                # The attach wait, told on the pod and its claims.
                _rule(["get", "create", "patch"], [""], ["events"]),
            ],
        ),
        cluster_role(
            "system:auth-delegator",
            [
                _rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
                _rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
            ],
        ),
    ]


def cluster_role_bindings() -> list[JSON]:
    return [
        cluster_role_binding("cluster-admin", "cluster-admin", [MASTERS]),
        cluster_role_binding("system:basic-user", "system:basic-user", [AUTHENTICATED]),
        cluster_role_binding("system:discovery", "system:discovery", [AUTHENTICATED]),
        cluster_role_binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            [AUTHENTICATED, UNAUTHENTICATED],
        ),
        cluster_role_binding("system:monitoring", "system:monitoring", [MONITORING]),
    ]


def policy(group: str) -> list[JSON]:
    """Every bootstrap object, roles before the bindings that grant them."""
    return [*cluster_roles(group), *cluster_role_bindings()]


def _union(current: list[Any], wanted: list[Any]) -> list[Any]:
    return [*current, *(w for w in wanted if w not in current)]


def reconcile(existing: JSON, wanted: JSON) -> JSON | None:
    """The stored object with what the bootstrap version adds, or None if nothing changes
    (or the administrator has turned auto-update off)."""
    meta = existing.get("metadata") or {}
    if (meta.get("annotations") or {}).get(AUTOUPDATE, "true") != "true":
        return None
    result = copy.deepcopy(existing)
    result_meta = result.setdefault("metadata", {})
    result_meta["labels"] = {**wanted["metadata"]["labels"], **(meta.get("labels") or {})}
    result_meta["annotations"] = {
        **wanted["metadata"]["annotations"],
        **(meta.get("annotations") or {}),
    }
    if wanted["kind"] == "ClusterRole":
        if "aggregationRule" in wanted:
            current = (existing.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
            result["aggregationRule"] = {
                "clusterRoleSelectors": _union(
                    current, wanted["aggregationRule"]["clusterRoleSelectors"]
                )
            }
        else:
            result["rules"] = _union(existing.get("rules") or [], wanted["rules"])
    else:
        result["subjects"] = _union(existing.get("subjects") or [], wanted["subjects"])
    return None if result == existing else result

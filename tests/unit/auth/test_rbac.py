"""auth/rbac: decisions as Kubernetes' RBAC authorizer makes them, over one policy.

The table covers verbs, subresources (``x/status`` and ``*/status``), resourceNames (which
never allow a request without a name), namespaced and cluster roles, a RoleBinding to a
ClusterRole (its namespace only), aggregation, nonResourceURLs, groups, ServiceAccounts and
the superuser group; further tests cover the index as roles change and the deny reasons.
"""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.auth import Decision, RequestAttributes, UserInfo
from apiserver.auth.rbac import RBACAuthorizer, RBACIndex
from apiserver.auth.rbac.bootstrap import policy
from apiserver.machinery.user import AUTHENTICATED, MASTERS

RBAC = "rbac.authorization.k8s.io"
DRA = "resource.k8s.io"


def cluster_role(
    name: str,
    *rules: dict[str, Any],
    labels: dict[str, str] | None = None,
    aggregate: dict[str, str] | None = None,
) -> dict[str, Any]:
    role: dict[str, Any] = {
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels or {}},
        "rules": list(rules),
    }
    if aggregate is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": aggregate}]}
    return role


def role(namespace: str, name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": list(rules),
    }


def rule(
    verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"verbs": verbs, "apiGroups": groups, "resources": resources}
    if names:
        out["resourceNames"] = names
    return out


def urls(verbs: list[str], paths: list[str]) -> dict[str, Any]:
    return {"verbs": verbs, "nonResourceURLs": paths}


def subject(kind: str, name: str, namespace: str = "") -> dict[str, Any]:
    out = {"kind": kind, "name": name}
    if namespace:
        out["namespace"] = namespace
    return out


def binding(
    name: str, role_kind: str, role_name: str, *subjects: dict[str, Any], namespace: str = ""
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {
        "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role_name},
        "subjects": list(subjects),
    }


POLICY = [
    cluster_role("pod-reader", rule(["get", "list", "watch"], [""], ["pods"])),
    cluster_role("claim-status", rule(["update", "patch"], [DRA], ["resourceclaims/status"])),
    cluster_role("any-status", rule(["get"], ["*"], ["*/status"])),
    cluster_role("gpu-class", rule(["get", "update", "list"], [DRA], ["deviceclasses"], ["gpu"])),
    cluster_role("patch-all", rule(["*"], [DRA], ["resourceslicepatches"])),
    cluster_role("metrics", urls(["get"], ["/metrics", "/logs/*"])),
    cluster_role("everything", rule(["*"], ["*"], ["*"])),
    cluster_role("agg", aggregate={"example.com/agg": "true"}),
    cluster_role(
        "agg-events-get", rule(["get"], [""], ["events"]), labels={"example.com/agg": "true"}
    ),
    cluster_role(
        "agg-events-list", rule(["list"], [""], ["events"]), labels={"example.com/agg": "true"}
    ),
    cluster_role(
        "not-agg", rule(["delete"], [""], ["events"]), labels={"example.com/agg": "false"}
    ),
    cluster_role(
        "pool-status-reader",
        rule(["create", "get", "list", "delete"], [DRA], ["resourcepoolstatusrequests"]),
    ),
    cluster_role(
        "impersonator",
        rule(["impersonate"], [""], ["users"], ["bob"]),
        rule(["impersonate"], [""], ["groups"]),
    ),
    role("ns1", "claim-editor", rule(["create", "get", "list"], [DRA], ["resourceclaims"])),
    binding("alice-pods", "ClusterRole", "pod-reader", subject("User", "alice")),
    binding("devs-metrics", "ClusterRole", "metrics", subject("Group", "devs")),
    binding("bob-claims", "Role", "claim-editor", subject("User", "bob"), namespace="ns1"),
    binding("carol-pods", "ClusterRole", "pod-reader", subject("User", "carol"), namespace="ns1"),
    binding(
        "robot-status", "ClusterRole", "claim-status", subject("ServiceAccount", "robot", "ns1")
    ),
    binding(
        "builder-patches",
        "ClusterRole",
        "patch-all",
        subject("ServiceAccount", "builder"),
        namespace="ns2",
    ),
    binding("dave-gpu", "ClusterRole", "gpu-class", subject("User", "dave")),
    binding("erin-agg", "ClusterRole", "agg", subject("User", "erin")),
    binding("frank-status", "ClusterRole", "any-status", subject("User", "frank")),
    binding("grace-pools", "ClusterRole", "pool-status-reader", subject("User", "grace")),
    binding("henry-missing", "Role", "no-such-role", subject("User", "henry"), namespace="ns1"),
    binding("ivan-all-ns3", "ClusterRole", "everything", subject("User", "ivan"), namespace="ns3"),
    binding("judy-imp", "ClusterRole", "impersonator", subject("User", "judy")),
]


def make_authorizer(objects: list[dict[str, Any]] = POLICY) -> RBACAuthorizer:
    index = RBACIndex()
    for obj in objects:
        index.upsert(obj)
    return RBACAuthorizer(index)


def user(name: str, *groups: str) -> UserInfo:
    return UserInfo(name, groups=(*groups, AUTHENTICATED))


def res(
    who: UserInfo,
    verb: str,
    group: str,
    resource: str,
    *,
    sub: str = "",
    ns: str = "",
    name: str = "",
) -> RequestAttributes:
    return RequestAttributes(
        user=who,
        verb=verb,
        resource_request=True,
        namespace=ns,
        api_group=group,
        api_version="v1",
        resource=resource,
        subresource=sub,
        name=name,
    )


def path(who: UserInfo, verb: str, url: str) -> RequestAttributes:
    return RequestAttributes(user=who, verb=verb, resource_request=False, path=url)


SA_ROBOT = "system:serviceaccount:ns1:robot"
SA_BUILDER = "system:serviceaccount:ns2:builder"

CASES = [
    # verbs on a cluster role bound cluster-wide
    ("get pods anywhere", res(user("alice"), "get", "", "pods", ns="ns9", name="p"), True),
    ("list pods at cluster scope", res(user("alice"), "list", "", "pods"), True),
    ("watch pods", res(user("alice"), "watch", "", "pods", ns="ns1"), True),
    (
        "delete is not a read verb",
        res(user("alice"), "delete", "", "pods", ns="ns1", name="p"),
        False,
    ),
    ("other group", res(user("alice"), "get", "apps", "pods", ns="ns1", name="p"), False),
    ("other resource", res(user("alice"), "get", "", "secrets", ns="ns1", name="s"), False),
    (
        "pods does not cover pods/log",
        res(user("alice"), "get", "", "pods", sub="log", ns="ns1", name="p"),
        False,
    ),
    ("unknown user", res(user("mallory"), "get", "", "pods", ns="ns1", name="p"), False),
    # subresources
    (
        "status subresource update",
        res(user(SA_ROBOT), "update", DRA, "resourceclaims", sub="status", ns="ns1", name="c"),
        True,
    ),
    (
        "status subresource patch",
        res(user(SA_ROBOT), "patch", DRA, "resourceclaims", sub="status", ns="x", name="c"),
        True,
    ),
    (
        "status rule does not cover main resource",
        res(user(SA_ROBOT), "update", DRA, "resourceclaims", ns="ns1", name="c"),
        False,
    ),
    (
        "*/status covers any resource's status",
        res(user("frank"), "get", DRA, "resourceslicepatches", sub="status", name="p"),
        True,
    ),
    (
        "*/status in any group",
        res(user("frank"), "get", "", "pods", sub="status", ns="ns1", name="p"),
        True,
    ),
    (
        "*/status does not cover the resource",
        res(user("frank"), "get", "", "pods", ns="ns1", name="p"),
        False,
    ),
    (
        "*/status does not cover other subresources",
        res(user("frank"), "get", "", "pods", sub="log", ns="ns1", name="p"),
        False,
    ),
    # resourceNames
    ("named get allowed", res(user("dave"), "get", DRA, "deviceclasses", name="gpu"), True),
    ("named update allowed", res(user("dave"), "update", DRA, "deviceclasses", name="gpu"), True),
    ("other name refused", res(user("dave"), "get", DRA, "deviceclasses", name="fpga"), False),
    ("list without a name refused", res(user("dave"), "list", DRA, "deviceclasses"), False),
    (
        "list selecting the name allowed",
        res(user("dave"), "list", DRA, "deviceclasses", name="gpu"),
        True,
    ),
    # '*' verbs
    (
        "star verbs create",
        res(user(SA_BUILDER), "create", DRA, "resourceslicepatches", ns="ns2"),
        True,
    ),
    (
        "star verbs deletecollection",
        res(user(SA_BUILDER), "deletecollection", DRA, "resourceslicepatches", ns="ns2"),
        True,
    ),
    # RoleBinding to a ClusterRole grants in its namespace only
    (
        "rolebinding to clusterrole, own namespace",
        res(user(SA_BUILDER), "get", DRA, "resourceslicepatches", ns="ns2", name="p"),
        True,
    ),
    (
        "rolebinding to clusterrole, other namespace",
        res(user(SA_BUILDER), "get", DRA, "resourceslicepatches", ns="ns1", name="p"),
        False,
    ),
    (
        "rolebinding to clusterrole, cluster scope",
        res(user(SA_BUILDER), "get", DRA, "resourceslicepatches", name="p"),
        False,
    ),
    ("carol pods in ns1", res(user("carol"), "list", "", "pods", ns="ns1"), True),
    ("carol pods in ns2", res(user("carol"), "list", "", "pods", ns="ns2"), False),
    (
        "everything in ns3",
        res(user("ivan"), "delete", "apps", "deployments", ns="ns3", name="d"),
        True,
    ),
    ("everything in ns3 is not cluster-wide", res(user("ivan"), "list", "", "nodes"), False),
    # namespaced Role
    ("role create in ns1", res(user("bob"), "create", DRA, "resourceclaims", ns="ns1"), True),
    ("role in ns1 only", res(user("bob"), "create", DRA, "resourceclaims", ns="ns2"), False),
    (
        "role verbs only",
        res(user("bob"), "delete", DRA, "resourceclaims", ns="ns1", name="c"),
        False,
    ),
    # ServiceAccounts: namespace from the subject, or from the RoleBinding
    (
        "sa in another namespace is another user",
        res(
            user("system:serviceaccount:ns2:robot"),
            "update",
            DRA,
            "resourceclaims",
            sub="status",
            ns="ns1",
            name="c",
        ),
        False,
    ),
    # aggregation
    ("aggregated get", res(user("erin"), "get", "", "events", ns="ns1", name="e"), True),
    ("aggregated list", res(user("erin"), "list", "", "events", ns="ns1"), True),
    (
        "label value must match",
        res(user("erin"), "delete", "", "events", ns="ns1", name="e"),
        False,
    ),
    # non-resource URLs through a group
    ("exact url", path(user("zed", "devs"), "get", "/metrics"), True),
    ("prefix url", path(user("zed", "devs"), "get", "/logs/kube/today"), True),
    ("prefix needs the slash", path(user("zed", "devs"), "get", "/logs"), False),
    ("url verb", path(user("zed", "devs"), "post", "/metrics"), False),
    ("url not granted", path(user("zed", "devs"), "get", "/debug"), False),
    ("url without the group", path(user("zed"), "get", "/metrics"), False),
    ("resource rules do not grant urls", path(user("ivan"), "get", "/metrics"), False),
    # superuser
    (
        "system:masters may do anything",
        res(user("root", MASTERS), "delete", "x.io", "things", ns="a", name="b"),
        True,
    ),
    ("system:masters any url", path(user("root", MASTERS), "put", "/anything"), True),
    # KEP-5677 pool-status-reader
    (
        "pool-status-reader create",
        res(user("grace"), "create", DRA, "resourcepoolstatusrequests"),
        True,
    ),
    (
        "pool-status-reader get",
        res(user("grace"), "get", DRA, "resourcepoolstatusrequests", name="r"),
        True,
    ),
    (
        "pool-status-reader list",
        res(user("grace"), "list", DRA, "resourcepoolstatusrequests"),
        True,
    ),
    (
        "pool-status-reader no update",
        res(user("grace"), "update", DRA, "resourcepoolstatusrequests", name="r"),
        False,
    ),
    (
        "pool-status-reader no claims",
        res(user("grace"), "list", DRA, "resourceclaims", ns="ns1"),
        False,
    ),
    # impersonation permissions
    ("impersonate the named user", res(user("judy"), "impersonate", "", "users", name="bob"), True),
    (
        "impersonate another user",
        res(user("judy"), "impersonate", "", "users", name="alice"),
        False,
    ),
    ("impersonate any group", res(user("judy"), "impersonate", "", "groups", name="g"), True),
]


@pytest.mark.parametrize(
    ("attributes", "allowed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_decision(attributes: RequestAttributes, allowed: bool) -> None:
    decision = await make_authorizer().authorize(attributes)
    assert decision.allowed is allowed
    assert decision.decision is (Decision.ALLOW if allowed else Decision.NO_OPINION)


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 40
    assert {c[2] for c in CASES} == {True, False}


def test_binding_to_a_missing_role_names_it_in_the_reason() -> None:
    decision = make_authorizer().decide(res(user("henry"), "get", "", "pods", ns="ns1", name="p"))
    assert decision.decision is Decision.NO_OPINION
    assert decision.reason == 'RBAC: role.rbac.authorization.k8s.io "no-such-role" not found'


def test_no_binding_no_reason() -> None:
    decision = make_authorizer().decide(res(user("mallory"), "get", "", "pods", ns="ns1", name="p"))
    assert decision.reason == ""


def test_index_follows_changes() -> None:
    authorizer = make_authorizer()
    erin = res(user("erin"), "delete", "", "events", ns="ns1", name="e")
    assert not authorizer.decide(erin).allowed
    # Labelling a role into the aggregation grants its rules at once.
    authorizer.index.upsert(
        cluster_role(
            "not-agg", rule(["delete"], [""], ["events"]), labels={"example.com/agg": "true"}
        )
    )
    assert authorizer.decide(erin).allowed
    authorizer.index.delete(cluster_role("not-agg"))
    assert not authorizer.decide(erin).allowed
    # Deleting the binding takes the grant away.
    alice = res(user("alice"), "get", "", "pods", ns="a", name="p")
    assert authorizer.decide(alice).allowed
    authorizer.index.delete(binding("alice-pods", "ClusterRole", "pod-reader"))
    assert not authorizer.decide(alice).allowed


def test_aggregation_is_transitive_and_excludes_itself() -> None:
    index = RBACIndex()
    for obj in policy(DRA):
        index.upsert(obj)
    admin = index.cluster_role_rules("admin")
    view = index.cluster_role_rules("view")
    assert admin is not None
    assert view is not None
    assert view
    assert set(view) < set(admin)  # view -> edit -> admin
    edit = index.cluster_role_rules("edit")
    assert edit is not None
    assert set(view) < set(edit) < set(admin)
    assert not any("resourcepoolstatusrequests" in r.resources for r in admin)  # KEP-5677


def test_bootstrap_policy_lets_authenticated_users_discover_and_review_themselves() -> None:
    authorizer = make_authorizer(policy(DRA))
    anyone = user("someone")
    assert authorizer.decide(path(anyone, "get", "/apis/resource.k8s.io/v1")).allowed
    assert authorizer.decide(path(anyone, "get", "/openapi/v3")).allowed
    assert authorizer.decide(
        res(anyone, "create", "authorization.k8s.io", "selfsubjectaccessreviews")
    ).allowed
    assert authorizer.decide(
        res(anyone, "create", "authentication.k8s.io", "selfsubjectreviews")
    ).allowed
    assert not authorizer.decide(res(anyone, "list", DRA, "resourceclaims", ns="default")).allowed
    assert not authorizer.decide(path(anyone, "get", "/metrics")).allowed
    # cluster-admin is bound to system:masters through the policy too (not only the shortcut).
    rules = authorizer.rules_for(user("root", MASTERS), "")
    assert any("*" in r.resources and "*" in r.verbs for r in rules.rules)


def test_a_binding_whose_subjects_change_grants_to_the_new_ones_only() -> None:
    authorizer = make_authorizer()
    pods = "pods"
    alice = res(user("alice"), "get", "", pods, ns="a", name="p")
    zed = res(user("zed"), "get", "", pods, ns="a", name="p")
    assert authorizer.decide(alice).allowed
    assert not authorizer.decide(zed).allowed
    authorizer.index.upsert(
        binding("alice-pods", "ClusterRole", "pod-reader", subject("User", "zed"))
    )
    assert not authorizer.decide(alice).allowed
    assert authorizer.decide(zed).allowed

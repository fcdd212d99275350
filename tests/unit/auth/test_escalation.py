"""auth/rbac/escalation.py: whether a user's rules cover rules it wants to grant, as
Kubernetes' escalation check decides it."""

from __future__ import annotations

import pytest

from apiserver.auth import UserInfo
from apiserver.auth.rbac import RBACAuthorizer, RBACIndex
from apiserver.auth.rbac.bootstrap import policy
from apiserver.auth.rbac.escalation import EscalationGuard, breakdown, describe, uncovered
from apiserver.auth.rbac.rules import Rule
from apiserver.machinery.errors import StatusError


def r(verbs: str, groups: str = "", resources: str = "", names: str = "", urls: str = "") -> Rule:
    def split(text: str) -> tuple[str, ...]:
        return tuple(text.split(",")) if text else ()

    return Rule(
        split(verbs),
        tuple(groups.split(",")) if resources else (),
        split(resources),
        split(names),
        split(urls),
    )


def test_breakdown() -> None:
    assert breakdown(r("get,list", "", "pods,services")) == [
        r("get", "", "pods"),
        r("get", "", "services"),
        r("list", "", "pods"),
        r("list", "", "services"),
    ]
    assert breakdown(r("get", urls="/a,/b")) == [r("get", urls="/a"), r("get", urls="/b")]


@pytest.mark.parametrize(
    ("owner", "wanted", "covered"),
    [
        ([r("*", "*", "*")], [r("get,delete", "apps", "deployments")], True),
        ([r("get,list", "", "pods")], [r("get", "", "pods")], True),
        ([r("get", "", "pods")], [r("get,delete", "", "pods")], False),
        ([r("get", "", "pods")], [r("*", "", "pods")], False),  # '*' is not "every verb I have"
        ([r("get", "", "*/status")], [r("get", "", "pods/status")], True),
        ([r("get", "", "pods")], [r("get", "", "pods/status")], False),
        ([r("get", "", "pods", "a")], [r("get", "", "pods", "a")], True),
        ([r("get", "", "pods", "a")], [r("get", "", "pods")], False),
        ([r("get", "", "pods")], [r("get", "", "pods", "a")], True),
        ([r("get", urls="/logs/*")], [r("get", urls="/logs/kube")], True),
        ([r("get", urls="/logs")], [r("get", urls="/logs/kube")], False),
        ([r("get", "", "pods"), r("list", "", "pods")], [r("get,list", "", "pods")], True),
    ],
)
def test_covers(owner: list[Rule], wanted: list[Rule], covered: bool) -> None:
    assert (uncovered(owner, wanted) == []) is covered


def test_describe_as_upstream_prints_it() -> None:
    assert describe(r("get", "", "pods", "a")) == (
        '{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get"]}'
    )


def _guard() -> EscalationGuard:
    index = RBACIndex()
    for obj in policy("resource.k8s.io"):
        index.upsert(obj)
    index.upsert(
        {
            "kind": "RoleBinding",
            "metadata": {"name": "bob-admin", "namespace": "team"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "admin"},
            "subjects": [{"kind": "User", "name": "bob"}],
        }
    )
    index.upsert(
        {
            "kind": "ClusterRole",
            "metadata": {"name": "binder"},
            "rules": [
                {
                    "verbs": ["bind"],
                    "apiGroups": [RBAC],
                    "resources": ["clusterroles"],
                    "resourceNames": ["cluster-admin"],
                }
            ],
        }
    )
    index.upsert(
        {
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "carol-binder"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "binder"},
            "subjects": [{"kind": "User", "name": "carol"}],
        }
    )
    return EscalationGuard(RBACAuthorizer(index))


BOB = UserInfo("bob", groups=("system:authenticated",))
CAROL = UserInfo("carol", groups=("system:authenticated",))
RBAC = "rbac.authorization.k8s.io"


def _role(rules: list[dict[str, object]]) -> dict[str, object]:
    return {"kind": "Role", "metadata": {"name": "r", "namespace": "team"}, "rules": rules}


def _binding(role_kind: str, role: str, namespace: str = "team") -> dict[str, object]:
    return {
        "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
        "metadata": {"name": "b", **({"namespace": namespace} if namespace else {})},
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role},
        "subjects": [{"kind": "User", "name": "someone"}],
    }


async def test_a_role_within_what_the_writer_holds() -> None:
    claims = {
        "verbs": ["create", "delete"],
        "apiGroups": ["resource.k8s.io"],
        "resources": ["resourceclaims"],
    }
    await _guard().check(_role([claims]), BOB)


async def test_a_role_beyond_what_the_writer_holds() -> None:
    classes = {
        "verbs": ["create"],
        "apiGroups": ["resource.k8s.io"],
        "resources": ["deviceclasses"],
    }
    with pytest.raises(StatusError) as caught:
        await _guard().check(_role([classes]), BOB)
    assert caught.value.code == 403
    assert caught.value.message == (
        'roles.rbac.authorization.k8s.io "r" is forbidden: user "bob" (groups=["system:authenticated"])'
        " is attempting to grant RBAC permissions not currently held:\n"
        '{APIGroups:["resource.k8s.io"], Resources:["deviceclasses"], Verbs:["create"]}'
    )


async def test_binding_a_role_the_writer_holds_in_that_namespace_only() -> None:
    guard = _guard()
    await guard.check(_binding("ClusterRole", "edit"), BOB)
    with pytest.raises(StatusError):
        await guard.check(_binding("ClusterRole", "cluster-admin"), BOB)
    with pytest.raises(StatusError):
        await guard.check(_binding("ClusterRole", "edit", namespace=""), BOB)


async def test_bind_permission_allows_binding_more_than_held() -> None:
    guard = _guard()
    await guard.check(_binding("ClusterRole", "cluster-admin", namespace=""), CAROL)
    with pytest.raises(StatusError):
        await guard.check(_binding("ClusterRole", "admin", namespace=""), CAROL)


async def test_missing_role_is_refused_by_name() -> None:
    with pytest.raises(StatusError) as caught:
        await _guard().check(_binding("Role", "nope"), BOB)
    assert 'role.rbac.authorization.k8s.io "nope" not found' in caught.value.message


async def test_superusers_and_in_process_writes_pass() -> None:
    guard = _guard()
    everything = _binding("ClusterRole", "cluster-admin", namespace="")
    await guard.check(everything, UserInfo("root", groups=("system:masters",)))
    await guard.check(everything, UserInfo(""))


async def test_aggregated_cluster_roles_need_full_authority() -> None:
    aggregated = {
        "kind": "ClusterRole",
        "metadata": {"name": "agg"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]},
    }
    with pytest.raises(StatusError) as caught:
        await _guard().check(aggregated, BOB)
    assert (
        "must have cluster-admin privileges to write aggregated clusterroles"
        in caught.value.message
    )

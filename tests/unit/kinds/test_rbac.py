"""kinds/rbac.py over a real store: RBAC objects validated as kube-apiserver validates them
(each error naming its field, nothing stored), v1 defaults, an immutable roleRef, the
bootstrap policy created and reconciled, and aggregated rules written back."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from apiserver.auth.rbac.bootstrap import AUTOUPDATE, policy, reconcile
from apiserver.controllers import ClusterRoleAggregationController, ensure_policy
from apiserver.kinds.rbac import (
    ClusterRoleBindingStrategy,
    ClusterRoleStrategy,
    RoleBindingStrategy,
    RoleStrategy,
)
from apiserver.machinery import DeleteOptions, Registry, WriteOptions
from apiserver.machinery.errors import StatusError
from apiserver.server.cluster import StandaloneCluster
from apiserver.server.rbac import RBACPolicy, RBACService
from apiserver.storage.sqlite import SQLiteStore

RBAC = "rbac.authorization.k8s.io"
API = f"{RBAC}/v1"
OPTS = WriteOptions()
HANG = 30.0


def registries(store: SQLiteStore) -> dict[str, Registry]:
    return {
        s.kind: Registry(s, store)
        for s in (
            RoleStrategy.upstream(),
            ClusterRoleStrategy.upstream(),
            RoleBindingStrategy.upstream(),
            ClusterRoleBindingStrategy.upstream(),
        )
    }


async def rejected(reg: Registry, namespace: str | None, obj: dict[str, Any]) -> list[str]:
    with pytest.raises(StatusError) as caught:
        await reg.create(namespace, copy.deepcopy(obj), OPTS)
    assert caught.value.code == 422
    name = obj["metadata"]["name"]
    with pytest.raises(StatusError):
        await reg.get(namespace, name)  # nothing stored
    return [c["field"] for c in (caught.value.details or {}).get("causes", [])]


def cluster_role(name: str, rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
        **extra,
    }


@pytest.mark.parametrize(
    ("rules", "fields"),
    [
        ([{"verbs": [], "apiGroups": [""], "resources": ["pods"]}], ["rules[0].verbs"]),
        ([{"verbs": ["get"], "resources": ["pods"]}], ["rules[0].apiGroups"]),
        ([{"verbs": ["get"], "apiGroups": [""]}], ["rules[0].resources"]),
        (
            [{"verbs": ["get"], "apiGroups": [""], "nonResourceURLs": ["/x"]}],
            ["rules[0].nonResourceURLs"],
        ),
    ],
)
async def test_cluster_role_rules(
    store: SQLiteStore, rules: list[dict[str, Any]], fields: list[str]
) -> None:
    assert (
        await rejected(registries(store)["ClusterRole"], None, cluster_role("bad", rules)) == fields
    )


async def test_non_resource_urls_only_in_cluster_roles(store: SQLiteStore) -> None:
    reg = registries(store)
    urls = [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}]
    await reg["ClusterRole"].create(None, cluster_role("ok", urls), OPTS)
    role = {
        "apiVersion": API,
        "kind": "Role",
        "metadata": {"name": "r", "namespace": "ns"},
        "rules": urls,
    }
    assert await rejected(reg["Role"], "ns", role) == ["rules[0].nonResourceURLs"]


async def test_aggregation_rule_needs_a_selector(store: SQLiteStore) -> None:
    role = cluster_role("agg", [], aggregationRule={"clusterRoleSelectors": []})
    assert await rejected(registries(store)["ClusterRole"], None, role) == [
        "aggregationRule.clusterRoleSelectors"
    ]


def cluster_binding(
    name: str, role_ref: dict[str, Any], subjects: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": role_ref,
        "subjects": subjects,
    }


CR = {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"}


@pytest.mark.parametrize(
    ("role_ref", "subjects", "fields"),
    [
        ({"apiGroup": RBAC, "kind": "Role", "name": "x"}, [], ["roleRef.kind"]),
        ({"apiGroup": "example.com", "kind": "ClusterRole", "name": "x"}, [], ["roleRef.apiGroup"]),
        (CR, [{"kind": "Robot", "name": "r"}], ["subjects[0].kind"]),
        (CR, [{"kind": "ServiceAccount", "name": "sa"}], ["subjects[0].namespace"]),
        (
            CR,
            [{"kind": "ServiceAccount", "name": "sa", "namespace": "n", "apiGroup": RBAC}],
            ["subjects[0].apiGroup"],
        ),
        (CR, [{"kind": "User", "name": "u", "apiGroup": "example.com"}], ["subjects[0].apiGroup"]),
        (CR, [{"kind": "User", "name": ""}], ["subjects[0].name"]),
    ],
)
async def test_cluster_role_binding(
    store: SQLiteStore, role_ref: dict[str, Any], subjects: list[dict[str, Any]], fields: list[str]
) -> None:
    reg = registries(store)["ClusterRoleBinding"]
    assert await rejected(reg, None, cluster_binding("b", role_ref, subjects)) == fields


async def test_binding_defaults_and_immutable_role_ref(store: SQLiteStore) -> None:
    reg = registries(store)["RoleBinding"]
    body = {
        "apiVersion": API,
        "kind": "RoleBinding",
        "metadata": {"name": "b", "namespace": "ns"},
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "bob"}, {"kind": "ServiceAccount", "name": "sa"}],
    }
    created = (await reg.create("ns", body, OPTS)).obj.copy()
    assert created["roleRef"]["apiGroup"] == RBAC
    assert created["subjects"][0]["apiGroup"] == RBAC
    assert "apiGroup" not in created["subjects"][1]  # a namespace-less account is this namespace's
    changed = copy.deepcopy(created)
    changed["roleRef"]["name"] = "edit"
    with pytest.raises(StatusError) as caught:
        await reg.update("ns", "b", changed, OPTS)
    assert caught.value.code == 422
    assert "cannot change roleRef" in caught.value.message
    assert (await reg.get("ns", "b")).copy()["roleRef"]["name"] == "view"


def test_reconcile_adds_what_bootstrap_has_and_keeps_the_rest() -> None:
    wanted = next(
        o for o in policy("resource.k8s.io") if o["metadata"]["name"] == "system:basic-user"
    )
    edited = copy.deepcopy(wanted)
    edited["rules"] = [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]
    edited["metadata"]["labels"] = {"mine": "yes"}
    merged = reconcile(edited, wanted)
    assert merged is not None
    assert merged["rules"] == [*edited["rules"], *wanted["rules"]]
    assert merged["metadata"]["labels"]["mine"] == "yes"
    assert reconcile(merged, wanted) is None
    edited["metadata"]["annotations"] = {AUTOUPDATE: "false"}
    assert reconcile(edited, wanted) is None


async def test_ensure_policy_creates_then_reconciles(store: SQLiteStore) -> None:
    regs = registries(store)
    objects = policy("resource.k8s.io")
    written = await ensure_policy(objects, regs)
    assert len(written) == len(objects)
    assert await ensure_policy(objects, regs) == []  # nothing to do the second time
    basic = (await regs["ClusterRole"].get(None, "system:basic-user")).copy()
    basic["rules"] = basic["rules"][:1]
    await regs["ClusterRole"].update(None, "system:basic-user", basic, OPTS)
    assert await ensure_policy(objects, regs) == ["ClusterRole/system:basic-user"]
    restored = (await regs["ClusterRole"].get(None, "system:basic-user")).copy()
    assert len(restored["rules"]) == 2


async def admin_widgets_until(store: SQLiteStore, revision: int, present: bool) -> None:
    """Follow the stored ``admin`` ClusterRole from ``revision`` until it does (or does not)
    grant widgets."""
    key = ClusterRoleStrategy.upstream().resource.key(None, "admin")
    watch = store.watch(key, revision)
    try:
        async with asyncio.timeout(HANG):
            async for event in watch:
                rules = event.object.obj.get("rules") or []
                if any("widgets" in r.get("resources", []) for r in rules) is present:
                    return
    finally:
        await watch.close()


async def test_service_feeds_the_index_and_writes_aggregated_rules(store: SQLiteStore) -> None:
    rbac = RBACPolicy()
    cluster = StandaloneCluster(
        store,
        "resource.k8s.io",
        authenticator=None,
        authorizer=rbac.authorizer,
        admission=[rbac.escalation],
    )
    service = RBACService(cluster, rbac, "resource.k8s.io")
    await service.start()
    try:
        assert all(service.readiness().values())
        assert isinstance(service.aggregation, ClusterRoleAggregationController)
        assert service.index.cluster_role_rules("cluster-admin") is not None  # fed at start
        regs = service.registries
        extra = cluster_role(
            "extra-to-view",
            [{"verbs": ["get"], "apiGroups": ["example.com"], "resources": ["widgets"]}],
        )
        extra["metadata"]["labels"] = {f"{RBAC}/aggregate-to-view": "true"}
        revision = await store.current_revision()
        await regs["ClusterRole"].create(None, extra, OPTS)
        await admin_widgets_until(store, revision, present=True)  # view -> edit -> admin
        revision = await store.current_revision()
        await regs["ClusterRole"].delete(None, "extra-to-view", DeleteOptions())
        await admin_widgets_until(store, revision, present=False)
    finally:
        await service.close()

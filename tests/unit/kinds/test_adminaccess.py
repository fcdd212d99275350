"""Admin access needs the namespace label, over a real SQLite store through the registries a
StandaloneCluster builds: a ResourceClaim or ResourceClaimTemplate asking for adminAccess
is created only in a namespace labelled ``resource.kubernetes.io/admin-access: "true"``;
elsewhere it is 422 naming the request's ``adminAccess`` field and nothing is stored."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.kinds.namespace import NamespaceStrategy
from apiserver.kinds.resourceclaim import ResourceClaimStrategy
from apiserver.kinds.resourceclaimtemplate import ResourceClaimTemplateStrategy
from apiserver.machinery import ListOptions, Registry, WriteOptions
from apiserver.machinery.errors import StatusError
from apiserver.server.cluster import StandaloneCluster
from apiserver.storage.sqlite import SQLiteStore

GROUP = "resource.k8s.io"
OPTS = WriteOptions(field_manager="test")
DRY = WriteOptions(field_manager="test", dry_run=True)
LABEL = "resource.kubernetes.io/admin-access"


def namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def claim_spec(*admin: bool | None) -> dict[str, Any]:
    requests = []
    for i, flag in enumerate(admin):
        exactly: dict[str, Any] = {"deviceClassName": "gpu"}
        if flag is not None:
            exactly["adminAccess"] = flag
        requests.append({"name": f"r{i}", "exactly": exactly})
    return {"devices": {"requests": requests}}


def claim(name: str, *admin: bool | None) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": claim_spec(*admin),
    }


def template(name: str, *admin: bool | None) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": claim_spec(*admin)},
    }


@pytest.fixture
def cluster(store: SQLiteStore) -> StandaloneCluster:
    return StandaloneCluster(store, GROUP, authenticator=None, authorizer=None)


def registry(cluster: StandaloneCluster, kind: str) -> Registry:
    strategy = {
        "ns": NamespaceStrategy.core(),
        "claims": ResourceClaimStrategy.upstream(),
        "templates": ResourceClaimTemplateStrategy.upstream(),
    }[kind]
    return cluster.registry(strategy.resource)


async def refused(write: Any) -> StatusError:
    with pytest.raises(StatusError) as raised:
        await write
    return raised.value


def forbidden_field(err: StatusError) -> str:
    assert (err.code, err.reason) == (422, "Invalid")
    causes = err.details["causes"]
    assert [c["reason"] for c in causes] == ["FieldValueForbidden"]
    field: str = causes[0]["field"]
    return field


@pytest.mark.parametrize(
    "labels",
    [None, {}, {LABEL: "false"}, {LABEL: "True"}, {"other": "true"}],
    ids=["no-labels", "empty", "false", "wrong-case", "other-label"],
)
async def test_admin_claim_refused_without_the_label(
    cluster: StandaloneCluster, labels: dict[str, str] | None
) -> None:
    await registry(cluster, "ns").create(None, namespace("team", labels), OPTS)
    claims = registry(cluster, "claims")
    err = await refused(claims.create("team", claim("c", None, True), OPTS))
    assert forbidden_field(err) == "spec.devices.requests[1].exactly.adminAccess"
    assert LABEL in err.message
    err = await refused(claims.create("team", claim("c", True), DRY))
    assert forbidden_field(err) == "spec.devices.requests[0].exactly.adminAccess"
    assert (await claims.list("team", ListOptions())).items == []


async def test_admin_template_refused_without_the_label(cluster: StandaloneCluster) -> None:
    await registry(cluster, "ns").create(None, namespace("team"), OPTS)
    templates = registry(cluster, "templates")
    err = await refused(templates.create("team", template("t", True), OPTS))
    assert forbidden_field(err) == "spec.spec.devices.requests[0].exactly.adminAccess"
    assert (await templates.list("team", ListOptions())).items == []


async def test_admin_claim_and_template_allowed_with_the_label(
    cluster: StandaloneCluster,
) -> None:
    await registry(cluster, "ns").create(None, namespace("ops", {LABEL: "true"}), OPTS)
    made = await registry(cluster, "claims").create("ops", claim("c", True), OPTS)
    assert made.obj.obj["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] is True
    await registry(cluster, "templates").create("ops", template("t", True), OPTS)
    assert len((await registry(cluster, "templates").list("ops", ListOptions())).items) == 1


async def test_claims_without_admin_access_need_no_label(cluster: StandaloneCluster) -> None:
    await registry(cluster, "ns").create(None, namespace("team"), OPTS)
    await registry(cluster, "claims").create("team", claim("plain", None, False), OPTS)
    await registry(cluster, "templates").create("team", template("plain", False), OPTS)
    assert len((await registry(cluster, "claims").list("team", ListOptions())).items) == 1

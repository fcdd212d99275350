"""The namespace lifecycle over a real SQLite store, through the registries a
StandaloneCluster builds: creates into a missing namespace are 404, into a terminating one
403; the system namespaces cannot be deleted; a deleted namespace is Terminating with the
``kubernetes`` finalizer until the namespace controller has deleted its content."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.controllers.namespacedeletion import ContentRemaining, NamespaceDeleter
from apiserver.kinds.namespace import NamespaceStrategy
from apiserver.kinds.resourceclaim import ResourceClaimStrategy
from apiserver.machinery import DeleteOptions, ListOptions, Registry, WriteOptions
from apiserver.machinery.errors import StatusError
from apiserver.server.cluster import StandaloneCluster
from apiserver.sources import StoreSource
from apiserver.storage.sqlite import SQLiteStore
from devtools.waiting import eventually

GROUP = "resource.k8s.io"
OPTS = WriteOptions(field_manager="test")


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def claim(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, **meta},
        "spec": {"devices": {"requests": []}},
    }


@pytest.fixture
def cluster(store: SQLiteStore) -> StandaloneCluster:
    return StandaloneCluster(store, GROUP, authenticator=None, authorizer=None)


def registries(cluster: StandaloneCluster) -> tuple[Registry, Registry]:
    return (
        cluster.registry(NamespaceStrategy.core().resource),
        cluster.registry(ResourceClaimStrategy.upstream().resource),
    )


async def refused(write: Any) -> StatusError:
    with pytest.raises(StatusError) as raised:
        await write
    return raised.value


async def test_create_into_a_missing_namespace_is_not_found(cluster: StandaloneCluster) -> None:
    namespaces, claims = registries(cluster)
    err = await refused(claims.create("nope", claim("c"), OPTS))
    assert (err.code, err.reason, err.message) == (404, "NotFound", 'namespaces "nope" not found')
    assert (await claims.list(None, ListOptions())).items == []
    await namespaces.create(None, namespace("nope"), OPTS)
    created = await claims.create("nope", claim("c"), OPTS)
    assert created.obj.obj["metadata"]["namespace"] == "nope"


async def test_system_namespaces_cannot_be_deleted(cluster: StandaloneCluster) -> None:
    namespaces, _ = registries(cluster)
    for name in ("default", "kube-system", "kube-public"):
        await namespaces.create(None, namespace(name), OPTS)
        err = await refused(namespaces.delete(None, name, DeleteOptions()))
        assert (err.code, err.reason) == (403, "Forbidden")
        assert (await namespaces.get(None, name)).obj["metadata"].get("deletionTimestamp") is None


async def test_a_new_namespace_carries_the_kubernetes_finalizer(
    cluster: StandaloneCluster,
) -> None:
    namespaces, _ = registries(cluster)
    created = (await namespaces.create(None, namespace("team-a"), OPTS)).obj.obj
    assert created["spec"] == {"finalizers": ["kubernetes"]}
    body = {**created, "spec": {}}  # only the namespace controller changes it
    kept = (await namespaces.update(None, "team-a", body, OPTS)).obj.obj
    assert kept["spec"] == {"finalizers": ["kubernetes"]}


async def test_deleting_a_namespace_deletes_its_content(
    store: SQLiteStore, cluster: StandaloneCluster
) -> None:
    namespaces, claims = registries(cluster)
    await namespaces.create(None, namespace("team-a"), OPTS)
    await namespaces.create(None, namespace("team-b"), OPTS)
    await claims.create("team-a", claim("plain"), OPTS)
    await claims.create("team-a", claim("held", finalizers=["example.com/hold"]), OPTS)
    await claims.create("team-b", claim("other"), OPTS)

    deleted = (await namespaces.delete(None, "team-a", DeleteOptions())).obj.obj
    assert deleted["status"]["phase"] == "Terminating"
    assert deleted["metadata"]["deletionTimestamp"]
    err = await refused(claims.create("team-a", claim("late"), OPTS))
    assert (err.code, err.reason) == (403, "Forbidden")
    assert err.details["causes"][0]["reason"] == "NamespaceTerminating"

    source = StoreSource(store, namespaces.resource.key_prefix(), name="namespaces")
    deleter = NamespaceDeleter(source, namespaces, cluster.registries())
    with pytest.raises(ContentRemaining, match="1 resourceclaims"):
        await deleter.sync("team-a")  # the held claim is marked, the other one is gone
    held = (await claims.get("team-a", "held")).copy()
    assert held["metadata"]["deletionTimestamp"]
    assert [
        i.obj["metadata"]["name"] for i in (await claims.list("team-a", ListOptions())).items
    ] == ["held"]
    assert (await namespaces.get(None, "team-a")).obj["spec"]["finalizers"] == ["kubernetes"]

    # An update in a terminating namespace goes on: here, the holder lets the claim go.
    held["metadata"]["finalizers"] = []
    await claims.update("team-a", "held", held, OPTS)
    await deleter.start()
    try:

        async def namespace_gone() -> bool:
            try:
                await namespaces.get(None, "team-a")
            except StatusError as err:
                return err.code == 404
            return False

        await eventually(namespace_gone, "namespace team-a deleted")
    finally:
        await deleter.close()
    assert (await claims.list("team-a", ListOptions())).items == []
    assert [
        i.obj["metadata"]["name"] for i in (await claims.list("team-b", ListOptions())).items
    ] == ["other"]
    assert (await namespaces.get(None, "team-b")).obj["status"]["phase"] == "Active"

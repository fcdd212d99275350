"""The standalone ResourceClaim controller over a real SQLite store, through the registries
a StandaloneCluster builds: claims made from pods' templates and named in the pods' status;
consumers that are gone pruned from ``reservedFor``; the last one gone deallocates; a claim
made for a pod goes with the pod."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from apiserver.controllers.resourceclaims import (
    POD_CLAIM_NAME,
    ResourceClaimController,
    generate_name,
)
from apiserver.kinds.namespace import NamespaceStrategy
from apiserver.kinds.pod import PodStrategy
from apiserver.kinds.resourceclaim import ResourceClaimStrategy
from apiserver.kinds.resourceclaimtemplate import ResourceClaimTemplateStrategy
from apiserver.machinery import DeleteOptions, ListOptions, Registry, StatusUpdate, WriteOptions
from apiserver.machinery.errors import StatusError
from apiserver.server.assembly import resource_claim_controller
from apiserver.server.cluster import StandaloneCluster
from apiserver.storage.sqlite import SQLiteStore
from devtools.waiting import eventually

OPTS = WriteOptions(field_manager="test")
NS = "default"
REQUESTS = {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}
ALLOCATION = {
    "devices": {
        "results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}
        ]
    }
}


class Cluster:
    def __init__(self, cluster: StandaloneCluster, controller: ResourceClaimController) -> None:
        self.pods = cluster.registry(PodStrategy.core().resource)
        self.claims = cluster.registry(ResourceClaimStrategy.upstream().resource)
        self.templates = cluster.registry(ResourceClaimTemplateStrategy.upstream().resource)
        self.controller = controller
        self.standalone = cluster

    async def claim_list(self) -> list[dict[str, Any]]:
        return [s.obj for s in (await self.claims.list(NS, ListOptions())).items]

    async def pod(self, name: str) -> dict[str, Any]:
        return (await self.pods.get(NS, name)).copy()

    async def claim(self, name: str) -> dict[str, Any] | None:
        """The claim, or None once it is gone (404)."""
        try:
            return (await self.claims.get(NS, name)).copy()
        except StatusError as err:
            if err.code != 404:
                raise
            return None

    async def create_pod(self, name: str, claims: list[dict[str, Any]]) -> dict[str, Any]:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "containers": [{"name": "main", "image": "busybox"}],
                "resourceClaims": claims,
            },
        }
        return (await self.pods.create(NS, body, OPTS)).obj.copy()

    async def set_status(self, registry: Registry, name: str, status: dict[str, Any]) -> None:
        obj = (await registry.get(NS, name)).copy()
        obj["status"] = {**(obj.get("status") or {}), **status}
        await registry.update(NS, name, obj, OPTS, update=StatusUpdate(registry.strategy))

    async def reserve(self, claim: str, *pods: dict[str, Any]) -> None:
        await self.set_status(
            self.claims,
            claim,
            {
                "allocation": ALLOCATION,
                "reservedFor": [
                    {"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}
                    for p in pods
                ],
            },
        )


@pytest.fixture
async def cluster(store: SQLiteStore) -> AsyncIterator[Cluster]:
    standalone = StandaloneCluster(store, "resource.k8s.io", authenticator=None, authorizer=None)
    namespaces = standalone.registry(NamespaceStrategy.core().resource)
    await namespaces.create(
        None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, OPTS
    )
    controller = resource_claim_controller(standalone)
    await standalone.start()
    await controller.start()
    try:
        yield Cluster(standalone, controller)
    finally:
        await controller.close()
        await standalone.close()


async def create_template(cluster: Cluster, name: str = "gpu-template") -> None:
    await cluster.templates.create(
        NS,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "metadata": {"labels": {"team": "a"}, "annotations": {"note": "from template"}},
                "spec": {"devices": REQUESTS},
            },
        },
        OPTS,
    )


async def claim_made_for(cluster: Cluster, pod: str) -> str:
    async def named() -> str | None:
        statuses = (await cluster.pod(pod)).get("status", {}).get("resourceClaimStatuses")
        return statuses[0]["resourceClaimName"] if statuses else None

    return await eventually(named, f"pod {pod} names its claim")


async def test_a_pods_template_becomes_its_claim_named_in_its_status(cluster: Cluster) -> None:
    await create_template(cluster)
    pod = await cluster.create_pod(
        "trainer", [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
    )
    name = await claim_made_for(cluster, "trainer")
    assert name.startswith("trainer-gpu-")
    claim = await cluster.claim(name)
    assert claim is not None
    meta = claim["metadata"]
    assert meta["labels"] == {"team": "a"}
    assert meta["annotations"] == {"note": "from template", POD_CLAIM_NAME: "gpu"}
    [owner] = meta["ownerReferences"]
    assert owner == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "trainer",
        "uid": pod["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert claim["spec"] == {"devices": REQUESTS}
    statuses = (await cluster.pod("trainer"))["status"]["resourceClaimStatuses"]
    assert statuses == [{"name": "gpu", "resourceClaimName": name}]
    assert len(await cluster.claim_list()) == 1  # exactly one, however often it synced


async def test_a_claim_made_before_a_lost_status_write_is_named_not_made_again(
    cluster: Cluster,
) -> None:
    await cluster.controller.close()
    # A controller whose worker does not run: the claim below was made by "an earlier
    # run" whose status write was lost.
    idle = resource_claim_controller(cluster.standalone)
    await idle.pods.start()
    await create_template(cluster)
    pod = await cluster.create_pod(
        "p", [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
    )
    made = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": "p-gpu-earlier",
            "namespace": NS,
            "annotations": {POD_CLAIM_NAME: "gpu"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "p",
                    "uid": pod["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {"devices": REQUESTS},
    }
    await cluster.claims.create(NS, made, OPTS)
    try:
        await eventually(
            lambda: idle.pods.get(f"{NS}/p") and idle.claims.get(f"{NS}/p-gpu-earlier")
        )
        await idle.sync_pod(f"{NS}/p")
    finally:
        await idle.pods.close()
    assert await claim_made_for(cluster, "p") == "p-gpu-earlier"
    assert [c["metadata"]["name"] for c in await cluster.claim_list()] == ["p-gpu-earlier"]


async def test_a_templated_claim_is_deallocated_and_deleted_with_its_pod(cluster: Cluster) -> None:
    await create_template(cluster)
    pod = await cluster.create_pod(
        "p", [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
    )
    name = await claim_made_for(cluster, "p")
    await cluster.reserve(name, pod)
    await cluster.pods.delete(NS, "p", DeleteOptions())

    async def gone() -> bool:
        return await cluster.claim(name) is None

    await eventually(gone, "the pod's claim is deleted")


async def test_a_finished_pods_claim_is_deleted_and_a_running_pods_kept(cluster: Cluster) -> None:
    await create_template(cluster)
    done = await cluster.create_pod(
        "done", [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
    )
    running = await cluster.create_pod(
        "running", [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
    )
    done_claim = await claim_made_for(cluster, "done")
    running_claim = await claim_made_for(cluster, "running")
    await cluster.reserve(done_claim, done)
    await cluster.reserve(running_claim, running)
    await cluster.set_status(cluster.pods, "done", {"phase": "Succeeded"})

    async def done_gone() -> bool:
        return await cluster.claim(done_claim) is None

    await eventually(done_gone, "the finished pod's claim is deleted")
    kept = await cluster.claim(running_claim)
    assert kept is not None
    assert kept["status"]["allocation"] == ALLOCATION
    assert [r["name"] for r in kept["status"]["reservedFor"]] == ["running"]


async def test_a_shared_claim_loses_consumers_one_by_one_and_is_deallocated_after_the_last(
    cluster: Cluster,
) -> None:
    shared = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "shared", "namespace": NS},
        "spec": {"devices": REQUESTS},
    }
    await cluster.claims.create(NS, shared, OPTS)
    entry = [{"name": "gpu", "resourceClaimName": "shared"}]
    a = await cluster.create_pod("a", entry)
    b = await cluster.create_pod("b", entry)
    await cluster.reserve("shared", a, b)
    await cluster.pods.delete(NS, "a", DeleteOptions())

    async def reserved_for() -> list[str] | None:
        claim = await cluster.claim("shared")
        assert claim is not None
        return [r["name"] for r in claim["status"].get("reservedFor", [])]

    await eventually(lambda: _equals(reserved_for, ["b"]), "a is pruned")
    assert (await cluster.claim("shared") or {})["status"]["allocation"] == ALLOCATION
    await cluster.pods.delete(NS, "b", DeleteOptions())

    async def deallocated() -> bool:
        claim = await cluster.claim("shared")
        assert claim is not None  # not made for a pod: it stays
        return "allocation" not in claim.get("status", {})

    await eventually(deallocated, "the last consumer gone deallocates")
    assert "reservedFor" not in ((await cluster.claim("shared")) or {}).get("status", {})


async def test_an_allocated_claim_nobody_reserved_is_left_alone(cluster: Cluster) -> None:
    """Only the transition from used to unused deallocates: a driver need not set
    reservedFor together with the allocation."""
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "preallocated", "namespace": NS},
        "spec": {"devices": REQUESTS},
    }
    await cluster.claims.create(NS, claim, OPTS)
    await cluster.set_status(cluster.claims, "preallocated", {"allocation": ALLOCATION})
    await cluster.controller.sync_claim(f"{NS}/preallocated")
    stored = await cluster.claim("preallocated")
    assert stored is not None
    assert stored["status"]["allocation"] == ALLOCATION


async def _equals(read: Any, expected: Any) -> bool:
    return bool(await read() == expected)


@pytest.mark.parametrize(
    ("pod", "entry", "expected"),
    [
        ("trainer", "gpu", "trainer-gpu-"),
        ("p" * 40, "e" * 40, "p" * 28 + "-" + "e" * 28 + "-"),
    ],
)
def test_generate_name_is_short_enough_for_a_random_suffix(
    pod: str, entry: str, expected: str
) -> None:
    assert generate_name(pod, entry) == expected
    assert len(generate_name(pod, entry)) <= 58

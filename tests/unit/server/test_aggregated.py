"""AggregatedCluster, wired but not started: it serves only our kinds, and /readyz names
each upstream source until it has synced (the e2e tests start it against a real upstream)."""

from __future__ import annotations

import httpx

from apiserver.kubeclient import ClusterConfig, KubeClient
from apiserver.server.aggregated import AggregatedCluster
from apiserver.server.app import APIServer, ServerSettings, build_app
from apiserver.storage.sqlite import SQLiteStore

GROUP = "resource.x-k8s.io"


async def test_serves_our_kinds_and_is_not_ready_before_the_upstream_has_synced(
    store: SQLiteStore,
) -> None:
    cluster = AggregatedCluster(
        store,
        GROUP,
        KubeClient(ClusterConfig("https://unused")),
        authenticator=None,
        authorizer=None,
    )
    served = {(r.resource.group, r.resource.plural, r.subresource) for r in cluster.served()}
    assert served == {
        (GROUP, "resourceslicepatches", ""),
        (GROUP, "resourceslicepatches", "status"),
        (GROUP, "resourcepoolstatusrequests", ""),
        (GROUP, "resourcepoolstatusrequests", "status"),
        (GROUP, "devicereservations", ""),
        (GROUP, "allocationreviews", ""),
    }
    assert {s.name for s in cluster.upstream} == {
        "resourceslices",
        "deviceclasses",
        "resourceclaims",
        "nodes",
        "devicetaintrules",
    }
    server = APIServer(store, cluster.served(), ServerSettings(), services=[cluster])
    server.ready = True  # the store is started by the fixture; the cluster is not
    transport = httpx.ASGITransport(app=build_app(server, None))
    async with httpx.AsyncClient(transport=transport, base_url="https://test") as client:
        ready = await client.get("/readyz", params={"verbose": "1"})
    assert ready.status_code == 503
    for source in (
        "resourceslices",
        "deviceclasses",
        "resourceclaims",
        "nodes",
        "devicetaintrules",
    ):
        assert f"[-]informer-{source} failed" in ready.text

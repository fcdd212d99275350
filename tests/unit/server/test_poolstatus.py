"""The pool status service in the server: /readyz waits for its sources and index, and the
KEP's three metrics are on the registry /metrics serves."""

from __future__ import annotations

import asyncio

import httpx
from prometheus_client import CollectorRegistry

from apiserver.server.app import APIServer, ServerSettings, build_app
from apiserver.server.cluster import StandaloneCluster
from apiserver.server.deviceview import DeviceViewOptions, DeviceViewService
from apiserver.server.poolstatus import PoolStatusOptions, PoolStatusService
from apiserver.storage.sqlite import SQLiteStore
from devtools.waiting import eventually

GROUP = "resource.k8s.io"
METRICS = (
    ("resourcepoolstatus_request_processing_duration_seconds", "histogram"),
    ("resourcepoolstatus_request_processing_errors_total", "counter"),
    ("resourcepoolstatus_requests_processed_total", "counter"),
)


async def test_readyz_waits_for_the_pool_index_and_metrics_are_served(store: SQLiteStore) -> None:
    metrics = CollectorRegistry()
    cluster = StandaloneCluster(store, GROUP, authenticator=None, authorizer=None)
    devices = DeviceViewService(
        cluster, GROUP, DeviceViewOptions(patch_status=False, pause_gc=False)
    )
    pools = PoolStatusService(
        cluster, GROUP, devices, PoolStatusOptions(freeze_gc=False), metrics=metrics
    )
    server = APIServer(
        store,
        [*cluster.served(), *devices.served()],
        ServerSettings(),
        services=[cluster, devices, pools],
        metrics=metrics,
    )
    server.ready = True  # the store is started by the fixture; the services are not yet
    app = build_app(server, None)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://test") as client:
        before = await client.get("/readyz", params={"verbose": "1"})
        assert before.status_code == 503
        for check in (
            "pool-status",
            "informer-resourceclaims",
            "informer-resourcepoolstatusrequests",
        ):
            assert f"[-]{check} failed" in before.text

        exposed = (await client.get("/metrics")).text
        for name, kind in METRICS:
            assert f"# TYPE {name} {kind}\n" in exposed
        assert "apiserver_request_total" in exposed  # the server's own, on the same registry

        for service in (cluster, devices, pools):
            await service.start()
        try:
            await asyncio.wait_for(pools.index.wait_synced(), 10)

            async def ready() -> httpx.Response | None:
                # Every service reports on its own schedule: wait for all.
                response = await client.get("/readyz", params={"verbose": "1"})
                return response if response.status_code == 200 else None

            after = await eventually(ready, "/readyz to pass")
            assert after.status_code == 200
            assert "[+]pool-status ok" in after.text
        finally:
            for service in (pools, devices, cluster):
                await service.close()

"""/readyz answers 503, naming what is not ready, until the device view's sources have
synced and its first build is done; the Device resource is then served from the view."""

from __future__ import annotations

import asyncio

import httpx

from apiserver.server.app import APIServer, ServerSettings, build_app
from apiserver.server.cluster import StandaloneCluster
from apiserver.server.deviceview import DeviceViewOptions, DeviceViewService
from apiserver.storage.sqlite import SQLiteStore
from devtools.waiting import eventually

GROUP = "resource.k8s.io"


async def test_readyz_waits_for_the_device_view(store: SQLiteStore) -> None:
    cluster = StandaloneCluster(store, GROUP, authenticator=None, authorizer=None)
    service = DeviceViewService(
        cluster, GROUP, DeviceViewOptions(patch_status=False, pause_gc=False)
    )
    server = APIServer(
        store,
        [*cluster.served(), *service.served()],
        ServerSettings(),
        services=[cluster, service],
    )
    server.ready = True  # the store is started by the fixture; the service is not yet
    app = build_app(server, None)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://test") as client:
        before = await client.get("/readyz", params={"verbose": "1"})
        assert before.status_code == 503
        assert "[-]device-view failed" in before.text
        assert "[-]informer-resourceslices failed" in before.text
        unavailable = await client.get(f"/apis/{GROUP}/v1alpha3/devices")
        assert unavailable.status_code == 503

        await cluster.start()
        await service.start()
        try:
            await asyncio.wait_for(service.view.wait_synced(), 10)

            async def ready() -> httpx.Response | None:
                # The cluster's other informers may still be listing when the view is built.
                answer = await client.get("/readyz")
                return answer if answer.status_code == 200 else None

            after = await eventually(ready, "/readyz to answer 200")
            assert after.text == "ok"
            listed = await client.get(f"/apis/{GROUP}/v1alpha3/devices")
            assert listed.status_code == 200
            assert listed.json()["kind"] == "DeviceList"
        finally:
            await service.close()
            await cluster.close()

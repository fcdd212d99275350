"""KubeSource (the aggregated-mode source) against the real server's resource.k8s.io/v1
kinds, which speak the kube-apiserver protocol: list, watch, raw JSON, resuming
after a lost connection, and listing again when the server answers 410 Gone."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from apiserver.kubeclient import KubeClient, load_kubeconfig
from apiserver.sources import Backoff, KubeSource, SourceEvent
from devtools.waiting import eventually

from .harness import ServerProcess, start_server
from .objects import RPSR_PATH, node_slice, rpsr, unique
from .tcpproxy import Proxy

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
WAIT = 30.0


def slice_obj(name: str, driver: str, node: str, **extra: Any) -> dict[str, Any]:
    return node_slice(name, driver, node, [{"name": "gpu-0", **extra}])


def api_client(server: ServerProcess, host: str | None = None) -> KubeClient:
    return KubeClient(load_kubeconfig(server.kubeconfig, host))


class Recorded:
    def __init__(self) -> None:
        self.events: list[SourceEvent] = []

    def __call__(self, event: SourceEvent) -> None:
        self.events.append(event)

    def kinds(self) -> list[tuple[str, str]]:
        return [(e.type.value, e.key) for e in self.events]


@pytest.fixture
async def api(server: ServerProcess) -> AsyncIterator[KubeClient]:
    async with api_client(server) as api_client_:
        yield api_client_


async def test_lists_and_watches_raw_objects(server: ServerProcess, api: KubeClient) -> None:
    driver = f"{unique('ks')}.example.com"
    first = f"{driver}-a"
    async with server.async_client() as http:
        resp = await http.post(SLICES, json=slice_obj(first, driver, "node-1"))
        assert resp.status_code == 201, resp.text
        source = KubeSource(
            api,
            SLICES,
            name="resourceslices",
            field_selector=f"spec.driver={driver}",
            page_size=1,
            watch_timeout=2,
        )
        recorded = Recorded()
        source.add_handler(recorded)
        await source.start()
        try:
            await asyncio.wait_for(source.wait_synced(), WAIT)
            assert recorded.kinds() == [("ADDED", first)]
            listed = source.get(first)
            assert listed is not None
            assert listed["kind"] == "ResourceSlice"  # filled in for items of a list
            assert listed["apiVersion"] == "resource.k8s.io/v1"

            second = f"{driver}-b"
            # A field the server keeps but this client has no model of survives as raw JSON.
            resp = await http.post(
                SLICES, json=slice_obj(second, driver, "node-2", allowMultipleAllocations=True)
            )
            assert resp.status_code == 201, resp.text
            resp = await http.delete(f"{SLICES}/{first}")
            assert resp.status_code == 200, resp.text
            await eventually(lambda: len(recorded.events) == 3)
            assert recorded.kinds()[1:] == [("ADDED", second), ("DELETED", first)]
            kept = source.get(second)
            assert kept is not None
            assert kept["spec"]["devices"][0]["allowMultipleAllocations"] is True

            # Writes elsewhere advance the source's revision through the watch's bookmarks.
            other = await http.post(RPSR_PATH, json=rpsr(unique("bookmark")))
            assert other.status_code == 201, other.text
            elsewhere = int(other.json()["metadata"]["resourceVersion"])
            await eventually(lambda: source.revision >= elsewhere)

            # The watch ends after its timeoutSeconds; the source watches on from where it was.
            # The sleep lets that timeout (2 s) run out: the expiry is what this step tests,
            # and the source has no signal for a watch that ended normally.
            await asyncio.sleep(2.5)
            third = f"{driver}-c"
            resp = await http.post(SLICES, json=slice_obj(third, driver, "node-3"))
            assert resp.status_code == 201, resp.text
            await eventually(lambda: source.get(third) is not None)
            assert source.relists == 0
            assert source.revision >= int(resp.json()["metadata"]["resourceVersion"])
        finally:
            await source.close()


async def test_lists_again_after_410_when_the_history_it_needs_is_gone(tmp_path: Path) -> None:
    """The connection drops; meanwhile the server compacts its short history past the
    source's resourceVersion; on reconnecting the watch gets 410 and the source lists again,
    telling its handlers what changed while it was away."""
    server = start_server(tmp_path / "short-history", ["--watch-history", "3"])
    proxy = Proxy(server.port)
    await proxy.up()
    driver = f"{unique('gone')}.example.com"
    try:
        async with (
            server.async_client() as http,
            api_client(server, f"https://127.0.0.1:{proxy.port}") as api,
        ):
            assert (
                await http.post(SLICES, json=slice_obj("kept", driver, "n0"))
            ).status_code == 201
            assert (
                await http.post(SLICES, json=slice_obj("gone", driver, "n0"))
            ).status_code == 201
            source = KubeSource(
                api,
                SLICES,
                name="resourceslices",
                field_selector=f"spec.driver={driver}",
                backoff=Backoff(initial=0.05, maximum=0.2),
            )
            recorded = Recorded()
            source.add_handler(recorded)
            await source.start()
            try:
                await asyncio.wait_for(source.wait_synced(), WAIT)
                await proxy.down()
                await eventually(lambda: source.failures > 0)  # it noticed, and retries
                recorded.events.clear()
                assert (await http.delete(f"{SLICES}/gone")).status_code == 200
                for i in range(110):  # past the server's history (compacted in batches)
                    resp = await http.post(SLICES, json=slice_obj(f"new-{i}", driver, "n1"))
                    assert resp.status_code == 201, resp.text
                await proxy.up()
                await eventually(lambda: source.relists == 1 and len(source.items()) == 111)
                assert source.expirations == 1
                kinds = recorded.kinds()
                assert ("DELETED", "gone") in kinds
                assert sum(1 for k, _ in kinds if k == "ADDED") == 110
                assert source.get("kept") is not None
            finally:
                await source.close()
    finally:
        with contextlib.suppress(AssertionError):
            await proxy.down()
        server.stop()


async def test_an_optional_collection_not_served_is_empty_until_it_is(
    server: ServerProcess, api: KubeClient
) -> None:
    """A kind the kube-apiserver does not serve (404) syncs as empty rather than failing,
    and is listed again later; a served one behaves as any other source."""
    missing = KubeSource(
        api,
        "/apis/resource.k8s.io/v1/nosuchkinds",
        name="nosuchkinds",
        optional=True,
        absent_recheck=0.2,
        backoff=Backoff(initial=0.05, maximum=0.2),
    )
    await missing.start()
    try:
        await asyncio.wait_for(missing.wait_synced(), WAIT)
        assert missing.absent
        assert missing.items() == []
        await eventually(lambda: missing.expirations >= 2, timeout=WAIT)  # it asks again
        assert missing.absent
        assert missing.failures == 0
    finally:
        await missing.close()

    name = unique("rule")
    rule = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": {"deviceSelector": {}, "taint": {"key": "example.com/k", "effect": "None"}},
    }
    resp = server.client().post("/apis/resource.k8s.io/v1/devicetaintrules", json=rule)
    assert resp.status_code == 201, resp.text
    served = KubeSource(
        api, "/apis/resource.k8s.io/v1/devicetaintrules", name="devicetaintrules", optional=True
    )
    await served.start()
    try:
        await asyncio.wait_for(served.wait_synced(), WAIT)
        assert not served.absent
        assert served.get(name) is not None
    finally:
        await served.close()
        server.client().delete(f"/apis/resource.k8s.io/v1/devicetaintrules/{name}")

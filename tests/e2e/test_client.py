"""kubernetes-asyncio against the server, as an OpenAPI-generated client would use it:
CustomObjectsApi for CRUD, status and watch, and the DynamicClient over our discovery.

Client quirks worked around here (they are the library's, not the server's):
CustomObjectsApi.patch_* picks ``application/json-patch+json`` for a dict body unless
``_content_type`` says otherwise, so merge patches name their content type; the
DynamicClient keeps discovery's ``shortNames`` only in ``extra_args`` and returns error
responses as Status objects instead of raising.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.dynamic import DynamicClient

from .harness import ServerProcess
from .objects import GROUP, MERGE_PATCH, RPSR_VERSION, RSP_VERSION, rpsr, rsp, unique

PLURAL = "resourceslicepatches"


@pytest.fixture
async def api(server: ServerProcess) -> AsyncIterator[client.ApiClient]:
    """An ApiClient configured from the harness kubeconfig (CA, server, token)."""
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(server.kubeconfig), client_configuration=configuration
    )
    async with client.ApiClient(configuration=configuration) as api_client:
        yield api_client


async def test_custom_objects_crud(api: client.ApiClient) -> None:
    """create / get / list / merge patch / delete through CustomObjectsApi."""
    objects = client.CustomObjectsApi(api)
    name = unique("ka")
    created = await objects.create_cluster_custom_object(GROUP, RSP_VERSION, PLURAL, rsp(name, 1))
    assert created["metadata"]["name"] == name
    assert created["metadata"]["generation"] == 1
    assert created["metadata"]["uid"]

    got = await objects.get_cluster_custom_object(GROUP, RSP_VERSION, PLURAL, name)
    assert got == created

    listed = await objects.list_cluster_custom_object(GROUP, RSP_VERSION, PLURAL)
    assert listed["kind"] == "ResourceSlicePatchList"
    assert name in [i["metadata"]["name"] for i in listed["items"]]

    selected = await objects.list_cluster_custom_object(
        GROUP, RSP_VERSION, PLURAL, field_selector=f"metadata.name={name}"
    )
    assert [i["metadata"]["name"] for i in selected["items"]] == [name]

    patched = await objects.patch_cluster_custom_object(
        GROUP,
        RSP_VERSION,
        PLURAL,
        name,
        {"spec": {"devices": {"priority": 2}}},
        _content_type=MERGE_PATCH,
    )
    assert patched["spec"]["devices"]["priority"] == 2
    assert patched["metadata"]["generation"] == 2

    json_patched = await objects.patch_cluster_custom_object(
        GROUP,
        RSP_VERSION,
        PLURAL,
        name,
        [{"op": "replace", "path": "/spec/devices/priority", "value": 3}],
    )
    assert json_patched["spec"]["devices"]["priority"] == 3

    status = await objects.delete_cluster_custom_object(GROUP, RSP_VERSION, PLURAL, name)
    assert status["kind"] == "Status"
    assert status["status"] == "Success"
    assert status["details"]["name"] == name
    with pytest.raises(ApiException) as info:
        await objects.get_cluster_custom_object(GROUP, RSP_VERSION, PLURAL, name)
    assert info.value.status == 404


async def test_custom_objects_status_subresource(api: client.ApiClient) -> None:
    """patch_cluster_custom_object_status writes only status; get_..._status reads it."""
    objects = client.CustomObjectsApi(api)
    name = unique("ka-status")
    await objects.create_cluster_custom_object(
        GROUP, RPSR_VERSION, "resourcepoolstatusrequests", rpsr(name)
    )
    condition = {
        "type": "Complete",
        "status": "True",
        "reason": "CalculationComplete",
        "message": "done",
        "lastTransitionTime": "2026-02-07T10:30:00Z",
    }
    patched = await objects.patch_cluster_custom_object_status(
        GROUP,
        RPSR_VERSION,
        "resourcepoolstatusrequests",
        name,
        {"spec": {"driver": "example.com/other"}, "status": {"conditions": [condition]}},
        _content_type=MERGE_PATCH,
    )
    assert patched["status"]["conditions"] == [condition]
    assert patched["spec"]["driver"] == "example.com/gpu"
    got = await objects.get_cluster_custom_object_status(
        GROUP, RPSR_VERSION, "resourcepoolstatusrequests", name
    )
    assert got["status"]["conditions"] == [condition]


async def test_api_errors_are_status(api: client.ApiClient) -> None:
    """Failures surface as ApiException whose body is a Status with reason and causes."""
    objects = client.CustomObjectsApi(api)
    name = unique("ka-err")
    await objects.create_cluster_custom_object(GROUP, RSP_VERSION, PLURAL, rsp(name))
    with pytest.raises(ApiException) as info:
        await objects.create_cluster_custom_object(GROUP, RSP_VERSION, PLURAL, rsp(name))
    assert info.value.status == 409
    assert '"reason":"AlreadyExists"' in info.value.body
    with pytest.raises(ApiException) as info:
        await objects.create_cluster_custom_object(
            GROUP, RSP_VERSION, PLURAL, rsp(unique("ka-err"), priority=2**40)
        )
    assert info.value.status == 422
    assert '"field":"spec.devices.priority"' in info.value.body


async def test_watch_receives_added_and_modified(api: client.ApiClient) -> None:
    """Watch().stream(list_cluster_custom_object) sees the existing object, then ADDED and
    MODIFIED events for changes made while it runs."""
    objects = client.CustomObjectsApi(api)
    existing = unique("ka-watch")
    added = unique("ka-watch")
    await objects.create_cluster_custom_object(GROUP, RSP_VERSION, PLURAL, rsp(existing, 1))
    seen: list[tuple[str, str, int]] = []
    changed = False
    async with watch.Watch() as watcher:
        stream = watcher.stream(
            objects.list_cluster_custom_object, GROUP, RSP_VERSION, PLURAL, timeout_seconds=30
        )
        async with asyncio.timeout(60):
            async for event in stream:
                obj: dict[str, Any] = event["object"]
                name = obj["metadata"]["name"]
                if name not in (existing, added):
                    continue
                seen.append((event["type"], name, obj["spec"]["devices"]["priority"]))
                if name == existing and not changed:
                    # The watch has delivered the current state: now change things.
                    changed = True
                    await objects.create_cluster_custom_object(
                        GROUP, RSP_VERSION, PLURAL, rsp(added, 7)
                    )
                    await objects.patch_cluster_custom_object(
                        GROUP,
                        RSP_VERSION,
                        PLURAL,
                        existing,
                        {"spec": {"devices": {"priority": 2}}},
                        _content_type=MERGE_PATCH,
                    )
                if len(seen) == 3:
                    watcher.stop()
    assert seen == [("ADDED", existing, 1), ("ADDED", added, 7), ("MODIFIED", existing, 2)]
    assert watcher.resource_version is not None


async def test_watch_from_resource_version(api: client.ApiClient) -> None:
    """A watch from a list's resourceVersion sends only later changes, ending at timeout."""
    objects = client.CustomObjectsApi(api)
    name = unique("ka-rv")
    listed = await objects.list_cluster_custom_object(GROUP, RSP_VERSION, PLURAL)
    await objects.create_cluster_custom_object(GROUP, RSP_VERSION, PLURAL, rsp(name))
    await objects.delete_cluster_custom_object(GROUP, RSP_VERSION, PLURAL, name)
    events: list[tuple[str, str]] = []
    async with watch.Watch() as watcher:
        async with asyncio.timeout(60):
            async for event in watcher.stream(
                objects.list_cluster_custom_object,
                GROUP,
                RSP_VERSION,
                PLURAL,
                resource_version=listed["metadata"]["resourceVersion"],
                field_selector=f"metadata.name={name}",
                timeout_seconds=2,
            ):
                events.append((event["type"], event["object"]["metadata"]["name"]))
    assert events == [("ADDED", name), ("DELETED", name)]


async def test_dynamic_client(api: client.ApiClient, tmp_path: Path) -> None:
    """The DynamicClient discovers both kinds and their status subresources and creates, gets,
    lists, patches, writes status, watches and deletes through them."""
    async with DynamicClient(api, cache_file=str(tmp_path / "discovery.json")) as dyn:
        patches = await dyn.resources.get(
            api_version=f"{GROUP}/{RSP_VERSION}", kind="ResourceSlicePatch"
        )
        assert patches.namespaced is False
        assert "status" in patches.subresources
        assert sorted(patches.subresources["status"].verbs) == ["get", "patch", "update"]
        # Legacy discovery's shortNames reach the Resource only as an extra argument: the
        # library does not map them to short_names, so searching by short name is not possible.
        assert patches.extra_args["shortNames"] == ["rsp"]
        requests = await dyn.resources.get(
            api_version=f"{GROUP}/{RPSR_VERSION}", kind="ResourcePoolStatusRequest"
        )
        assert requests.name == "resourcepoolstatusrequests"
        assert requests.extra_args["shortNames"] == ["rpsr"]

        name = unique("dyn")
        created = await dyn.create(patches, body=rsp(name, 1))
        assert created.metadata.name == name
        got = await dyn.get(patches, name=name)
        assert got.spec.devices.priority == 1
        listed = await dyn.get(patches)
        assert name in [i.metadata.name for i in listed.items]

        patched = await dyn.patch(
            patches,
            name=name,
            body={"spec": {"devices": {"priority": 2}}},
            content_type=MERGE_PATCH,
        )
        assert patched.spec.devices.priority == 2
        status = await dyn.patch(
            patches.subresources["status"],
            name=name,
            body={"status": {"matchedDevices": 4}},
            content_type=MERGE_PATCH,
        )
        assert status.status.matchedDevices == 4
        assert status.metadata.generation == 2

        events = []
        async with asyncio.timeout(60):
            async for event in dyn.watch(patches, name=name, timeout=2):
                events.append((event["type"], event["object"].metadata.name))
        assert events == [("ADDED", name)]

        await dyn.delete(patches, name=name)
        # kubernetes-asyncio's DynamicClient reads responses unpreloaded and so never raises
        # for HTTP errors: the 404 comes back as the server's Status object.
        gone = await dyn.get(patches, name=name)
        assert (gone.kind, gone.code, gone.reason) == ("Status", 404, "NotFound")
        assert gone.details.name == name

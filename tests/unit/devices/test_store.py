"""The Device resource: the read-only store over the view, served by the generic registry
(get, list with selectors and pages, watch from a revision, 410 past the window, tables)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from apiserver.devices import DeviceStore
from apiserver.kinds.device import DeviceStrategy
from apiserver.machinery import ComputedResource, ListOptions, Registry, parse_field_selector
from apiserver.machinery.handlers import Endpoint
from apiserver.machinery.table import table
from apiserver.storage import (
    EventType,
    RevisionCompactedError,
    StorageUnavailableError,
    WatchEvent,
)
from tests.unit.builders import DRIVER, Setup, device, patch_obj, slice_obj, start_view

STRATEGY = DeviceStrategy.for_group("resource.k8s.io")
PREFIX = STRATEGY.resource.key_prefix()
MARK = {f"{DRIVER}/marked": {"bool": True}}


class Served:
    def __init__(self, setup: Setup, store: DeviceStore) -> None:
        self.setup = setup
        self.store = store
        self.registry = Registry(STRATEGY, store)

    async def names(self, fields: str = "") -> list[str]:
        selector = parse_field_selector(fields, self.registry.field_getters)
        listed = await self.registry.list(None, ListOptions(field_selector=selector))
        return [i.obj["metadata"]["name"] for i in listed.items]


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    setup = await start_view(
        [
            slice_obj("node-1", [device("gpu-0", model="a100"), device("gpu-1", model="h100")]),
            slice_obj("node-2", [device("gpu-0", model="a100")], node="node-2"),
            slice_obj("fabric", [device("nic-0")], driver="nic.example.com", allNodes=True),
        ]
    )
    store = DeviceStore(STRATEGY.resource, window=6)
    setup.view.subscribe(store)
    yield Served(setup, store)
    await store.close()
    await setup.close()


async def _next(events: AsyncIterator[WatchEvent]) -> WatchEvent:
    return await asyncio.wait_for(anext(events), 10)


async def test_get_and_list_serve_the_view(served: Served) -> None:
    assert await served.names() == [
        "fabric.nic-0",
        "node-1.gpu-0",
        "node-1.gpu-1",
        "node-2.gpu-0",
    ]
    got = await served.registry.get(None, "node-1.gpu-1")
    obj = got.obj
    assert obj["apiVersion"] == "resource.k8s.io/v1alpha3"
    assert obj["kind"] == "Device"
    assert obj["metadata"]["resourceVersion"] == str(served.store.revision)
    assert obj["spec"]["driver"] == DRIVER
    assert obj["spec"]["pool"]["name"] == "node-1"
    assert obj["spec"]["nodeName"] == "node-1"
    assert obj["spec"]["device"] == "gpu-1"
    assert obj["spec"]["attributes"] == {"model": {"string": "h100"}}
    fabric = (await served.registry.get(None, "fabric.nic-0")).obj
    assert fabric["spec"]["allNodes"] is True


async def test_field_selectors_on_driver_pool_node_and_device(served: Served) -> None:
    assert await served.names("spec.driver=nic.example.com") == ["fabric.nic-0"]
    assert await served.names("spec.pool.name=node-1") == [
        "node-1.gpu-0",
        "node-1.gpu-1",
    ]
    assert await served.names("spec.nodeName=node-2") == ["node-2.gpu-0"]
    assert await served.names(f"spec.driver={DRIVER},spec.device=gpu-0") == [
        "node-1.gpu-0",
        "node-2.gpu-0",
    ]


async def test_a_patch_shows_in_status_and_in_the_table(served: Served) -> None:
    served.setup.patches.put(patch_obj("maint", priority=3, device="gpu-1", attributes=MARK))
    await served.setup.settle()
    obj = (await served.registry.get(None, "node-1.gpu-1")).obj
    assert obj["status"]["patchedBy"] == [
        {"name": "maint", "priority": 3, "attributes": [f"{DRIVER}/marked"]}
    ]
    assert obj["spec"]["attributes"]["marked"] == {"bool": True}
    rows = table(STRATEGY.table_columns(), [obj])
    header = [c["name"] for c in rows["columnDefinitions"]]
    cells = dict(zip(header, rows["rows"][0]["cells"], strict=True))
    assert cells["Patched-By"] == "maint"
    assert (cells["Driver"], cells["Pool"], cells["Node"], cells["Device"]) == (
        DRIVER,
        "node-1",
        "node-1",
        "gpu-1",
    )
    assert cells["Attributes"] == "marked=true,model=h100"


async def test_pages_stay_on_one_revision_while_the_view_changes(served: Served) -> None:
    first = await served.registry.list(None, ListOptions(limit=2))
    assert [i.obj["metadata"]["name"] for i in first.items] == ["fabric.nic-0", "node-1.gpu-0"]
    served.setup.slices.remove("node-2")
    served.setup.slices.put(slice_obj("node-0", [device("gpu-9")]))
    await served.setup.settle()
    rest = await served.registry.list(None, ListOptions(continue_token=first.continue_token))
    assert [i.obj["metadata"]["name"] for i in rest.items] == ["node-1.gpu-1", "node-2.gpu-0"]
    assert rest.revision == first.revision
    now = await served.names()
    assert "node-0.gpu-9" in now
    assert "node-2.gpu-0" not in now


async def test_watch_replays_the_window_then_follows(served: Served) -> None:
    start = served.store.revision
    served.setup.patches.put(patch_obj("p", pool="node-2", attributes=MARK))
    await served.setup.settle()
    watch = served.store.watch(PREFIX, start)
    events = aiter(watch)
    replayed = await _next(events)
    assert replayed.type is EventType.MODIFIED
    assert replayed.object.key == f"{PREFIX}node-2.gpu-0"
    assert replayed.prev is not None
    assert "status" not in replayed.prev.obj
    served.setup.slices.remove("node-2")
    await served.setup.settle()
    gone = await _next(events)
    assert gone.type is EventType.DELETED
    assert gone.revision == served.store.revision
    assert watch.progress() == served.store.revision
    await watch.close()


async def test_revisions_older_than_the_window_are_gone(served: Served) -> None:
    start = served.store.revision
    for i in range(4):  # two devices change per commit; the window holds six events
        served.setup.patches.put(
            patch_obj("p", pool="node-1", attributes={f"{DRIVER}/n": {"int": i}})
        )
        await served.setup.settle()
    assert served.store.compacted_revision > start
    with pytest.raises(RevisionCompactedError):
        await anext(aiter(served.store.watch(PREFIX, start)))
    with pytest.raises(RevisionCompactedError):
        await served.store.list(PREFIX, revision=start)
    recent = served.store.compacted_revision
    page = await served.store.list(PREFIX, revision=recent)
    assert page.revision == recent


def test_the_device_kind_can_only_be_read() -> None:
    """The view's store has no writes, and the Device kind served over it offers get, list
    and watch only: the handler answers every write with 405."""
    store = DeviceStore(STRATEGY.resource)
    assert not any(hasattr(store, w) for w in ("create", "update", "delete", "compact"))
    endpoint = Endpoint.of(ComputedResource(STRATEGY, store))
    assert (endpoint.getter, endpoint.lister, endpoint.watcher) == (endpoint.served,) * 3
    writes = (
        endpoint.creater,
        endpoint.updater,
        endpoint.patcher,
        endpoint.applier,
        endpoint.deleter,
        endpoint.collection_deleter,
    )
    assert writes == (None,) * 6


async def test_reads_are_unavailable_until_the_view_has_synced() -> None:
    store = DeviceStore(STRATEGY.resource)
    with pytest.raises(StorageUnavailableError):
        await store.list(PREFIX)
    with pytest.raises(StorageUnavailableError):
        await store.get(f"{PREFIX}x")

"""A kind served in two versions over one SQLite store: the stored version's registry over
the store, the other's over a ``ConvertingStore`` (as ``serve_kinds`` builds them). Objects
are stored once, in the storage version, and read in either at one resourceVersion; writes
in the other version are validated in its own terms."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import orjson
import pytest

from apiserver.api.resource.resourcepoolstatusrequest_conversion import KEPT
from apiserver.kinds.resourcepoolstatusrequest import ResourcePoolStatusRequestStrategy
from apiserver.kinds.resourcepoolstatusrequest_v1alpha3 import (
    ResourcePoolStatusRequestV1alpha3Strategy,
)
from apiserver.machinery import (
    ConvertingStore,
    ListOptions,
    Registry,
    StatusSubresource,
    WriteOptions,
)
from apiserver.machinery.errors import StatusError
from apiserver.server.cluster import serve_kinds
from apiserver.storage import EventType
from apiserver.storage.sqlite import SQLiteStore
from apiserver.toolkit import MERGE_PATCH

GROUP = "resource.k8s.io"
OPTS = WriteOptions()


@pytest.fixture
def v1alpha1(store: SQLiteStore) -> Registry:
    return Registry(ResourcePoolStatusRequestStrategy.for_group(GROUP), store)


@pytest.fixture
def v1alpha3(store: SQLiteStore) -> Registry:
    strategy = ResourcePoolStatusRequestV1alpha3Strategy.for_group(GROUP)
    assert strategy.conversion is not None
    return Registry(strategy, ConvertingStore(store, strategy.resource, strategy.conversion))


def request(version: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": {"driver": "gpu.example.com", **spec},
    }


def test_serve_kinds_puts_the_served_version_over_a_converting_store(
    store: SQLiteStore,
) -> None:
    served = serve_kinds(
        [
            ResourcePoolStatusRequestStrategy.for_group(GROUP),
            ResourcePoolStatusRequestV1alpha3Strategy.for_group(GROUP),
        ],
        store,
    )
    registries = [r for r in served if isinstance(r, Registry)]
    assert [(r.resource.version, type(r.store)) for r in registries] == [
        ("v1alpha1", SQLiteStore),
        ("v1alpha3", ConvertingStore),
    ]
    assert all(r.resource.key_prefix() == registries[0].resource.key_prefix() for r in registries)
    assert sum(isinstance(r, StatusSubresource) for r in served) == 2


async def test_created_in_v1alpha3_stored_and_read_as_v1alpha1(
    v1alpha1: Registry, v1alpha3: Registry, store: SQLiteStore
) -> None:
    created = await v1alpha3.create(None, request("v1alpha3", "a", poolName="p"), OPTS)
    assert created.obj.obj["apiVersion"] == f"{GROUP}/v1alpha3"
    raw = await store.get(v1alpha1.resource.key(None, "a"))
    assert raw is not None
    assert raw.obj["apiVersion"] == f"{GROUP}/v1alpha1"  # stored once, in the storage version
    assert raw.obj["spec"] == {"driver": "gpu.example.com", "poolName": "p", "limit": 100}
    old = await v1alpha1.get(None, "a")
    assert old.revision == created.obj.revision
    assert old.obj["metadata"]["resourceVersion"] == created.obj.obj["metadata"]["resourceVersion"]
    listed = await v1alpha3.list(None, ListOptions())
    assert [o.obj["apiVersion"] for o in listed.items] == [f"{GROUP}/v1alpha3"]


async def test_an_update_in_v1alpha3_keeps_what_only_v1alpha1_says(
    v1alpha1: Registry, v1alpha3: Registry
) -> None:
    """A label added through v1alpha3 (merge patch, then a PUT of what was read) keeps the
    TTL that v1alpha3 has no field for; the spec is unchanged, the generation too."""
    await v1alpha1.create(None, request("v1alpha1", "t", ttlSecondsAfterComplete=30), OPTS)
    read = (await v1alpha3.get(None, "t")).copy()
    assert orjson.loads(read["metadata"]["annotations"][KEPT]) == {
        "spec": {"ttlSecondsAfterComplete": 30}
    }
    await v1alpha3.patch(None, "t", b'{"metadata":{"labels":{"a":"b"}}}', MERGE_PATCH, OPTS)
    read = (await v1alpha3.get(None, "t")).copy()
    read["metadata"]["labels"]["c"] = "d"
    await v1alpha3.update(None, "t", read, OPTS)
    stored = (await v1alpha1.get(None, "t")).obj
    assert stored["spec"]["ttlSecondsAfterComplete"] == 30
    assert stored["metadata"]["labels"] == {"a": "b", "c": "d"}
    assert stored["metadata"]["generation"] == 1
    assert KEPT not in (stored["metadata"].get("annotations") or {})


async def test_errors_name_the_fields_of_the_version_sent(
    v1alpha3: Registry, store: SQLiteStore
) -> None:
    before = store.revision
    body = request("v1alpha3", "bad", limit=0, defaultPartitionTypeAttribute="gpu.example.com/p")
    with pytest.raises(StatusError) as refused:
        await v1alpha3.create(None, body, OPTS)
    assert refused.value.code == 422
    assert refused.value.details is not None
    assert [c["field"] for c in refused.value.details["causes"]] == [
        "spec.limit",
        "spec.defaultPartitionTypeAttribute",
    ]
    await v1alpha3.create(None, request("v1alpha3", "ok"), OPTS)
    status = StatusSubresource(v1alpha3)
    pools = [{"driver": "gpu.example.com", "poolName": "p", "generation": 1, "sliceCount": 1}]
    patch = orjson.dumps({"status": {"pools": pools}})
    with pytest.raises(StatusError) as refused:
        await status.patch(None, "ok", patch, MERGE_PATCH, replace(OPTS))
    assert refused.value.code == 422
    assert refused.value.details is not None
    fields = [c["field"] for c in refused.value.details["causes"]]
    # sliceCount is v1alpha1's name: unknown in v1alpha3; poolCount is v1alpha3's.
    assert "status.poolCount" in fields
    assert store.revision == before + 1  # only the valid create was stored


async def test_one_watch_sees_writes_in_both_versions_in_its_own_version(
    v1alpha1: Registry, v1alpha3: Registry
) -> None:
    """A watch through v1alpha3 sees a v1alpha1 create and a v1alpha3 status write, each as
    v1alpha3 (the status's seed fields renamed), at the store's revisions."""
    watch = v1alpha3.store.watch(v1alpha3.resource.key_prefix(), v1alpha3.store.revision)
    events = aiter(watch)
    created = await v1alpha1.create(None, request("v1alpha1", "w"), OPTS)
    status = StatusSubresource(v1alpha3)
    body = orjson.dumps({"status": {"poolCount": 0, "conditions": []}})
    written = await status.patch(None, "w", body, MERGE_PATCH, OPTS)
    first = await asyncio.wait_for(anext(events), 10)
    second = await asyncio.wait_for(anext(events), 10)
    await watch.close()
    assert (first.type, first.object.revision) == (EventType.ADDED, created.obj.revision)
    assert first.object.obj["apiVersion"] == f"{GROUP}/v1alpha3"
    assert (second.type, second.object.revision) == (EventType.MODIFIED, written.obj.revision)
    assert second.object.obj["status"] == {"poolCount": 0, "conditions": []}
    assert second.prev is not None
    assert second.prev.obj["apiVersion"] == f"{GROUP}/v1alpha3"
    stored = (await v1alpha1.get(None, "w")).obj
    assert stored["status"] == {"conditions": []}  # no pools, not Complete: no counts


async def test_a_stale_resource_version_in_v1alpha3_is_a_conflict(
    v1alpha1: Registry, v1alpha3: Registry
) -> None:
    await v1alpha1.create(None, request("v1alpha1", "c"), OPTS)
    read = (await v1alpha3.get(None, "c")).copy()
    await v1alpha1.patch(None, "c", b'{"metadata":{"labels":{"x":"1"}}}', MERGE_PATCH, OPTS)
    read["metadata"]["labels"] = {"y": "2"}
    with pytest.raises(StatusError) as refused:
        await v1alpha3.update(None, "c", read, OPTS)
    assert refused.value.code == 409
    assert (await v1alpha1.get(None, "c")).obj["metadata"]["labels"] == {"x": "1"}


async def test_an_object_at_a_revision_is_converted_once_within_the_byte_bound(
    store: SQLiteStore,
) -> None:
    """Readers of one revision share one conversion; a new revision is converted anew; the
    kept conversions stay within their byte bound (the oldest read goes first)."""
    strategy = ResourcePoolStatusRequestV1alpha3Strategy.for_group(GROUP)
    base = strategy.conversion
    assert base is not None
    calls: list[str] = []

    def counted(obj: dict[str, Any]) -> dict[str, Any]:
        calls.append(obj["metadata"]["name"])
        return base.from_stored(obj)

    conversion = replace(base, from_stored=counted)
    v1alpha1 = Registry(ResourcePoolStatusRequestStrategy.for_group(GROUP), store)
    for name in ("a", "b"):
        await v1alpha1.create(None, request("v1alpha1", name), OPTS)
    size = len((await ConvertingStore(store, strategy.resource, conversion).get(
        strategy.resource.key(None, "a")
    )).raw)  # fmt: skip
    converting = ConvertingStore(store, strategy.resource, conversion, cache_bytes=size + 10)
    calls.clear()
    key_a, key_b = strategy.resource.key(None, "a"), strategy.resource.key(None, "b")
    first = await converting.get(key_a)
    second = await converting.get(key_a)
    assert second is first
    assert calls == ["a"]
    await converting.list(strategy.resource.key_prefix())
    assert calls == ["a", "b"]  # b pushed a out: only one fits
    await converting.get(key_a)
    assert calls == ["a", "b", "a"]
    await v1alpha1.patch(None, "a", b'{"metadata":{"labels":{"x":"1"}}}', MERGE_PATCH, OPTS)
    changed = await converting.get(key_a)
    assert changed is not None
    assert changed.obj["metadata"]["labels"] == {"x": "1"}
    assert calls == ["a", "b", "a", "a"]
    await converting.get(key_b)
    assert calls[-1] == "b"

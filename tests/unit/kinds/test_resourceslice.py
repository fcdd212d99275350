"""The ResourceSlice strategy over a real SQLite store: scope and group, taint times, table
columns, field selectors, and rejected writes that store nothing."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from apiserver.kinds import standalone_strategies, strategies
from apiserver.kinds.resourceslice import ResourceSliceStrategy
from apiserver.machinery import ListOptions, Registry, WriteOptions, parse_field_selector
from apiserver.machinery.errors import StatusError
from apiserver.machinery.table import table
from apiserver.storage.sqlite import SQLiteStore
from apiserver.toolkit import MERGE_PATCH

OPTS = WriteOptions()


@pytest.fixture
def slices(store: SQLiteStore) -> Registry:
    return Registry(ResourceSliceStrategy.upstream(), store)


def body(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": f"{name}-pool", "generation": 0, "resourceSliceCount": 1},
            "nodeName": f"{name}-node",
            "devices": [{"name": "gpu-0"}],
            **spec,
        },
    }


def test_served_as_upstream_resource_k8s_io_v1_whatever_our_group() -> None:
    for strategy in strategies("resource.x-k8s.io"):
        if strategy.resource.kind == "ResourceSlice":
            resource = strategy.resource
            break
    else:
        raise AssertionError("ResourceSlice is not served")
    assert (resource.group, resource.version, resource.plural) == (
        "resource.k8s.io",
        "v1",
        "resourceslices",
    )
    assert not resource.namespaced
    assert not ResourceSliceStrategy.has_status
    assert "ResourceSlice" in [s.resource.kind for s in standalone_strategies()]
    assert "ResourceSlice" not in [
        s.resource.kind for s in strategies("resource.k8s.io", standalone=False)
    ]


async def test_taints_get_the_time_they_were_added(slices: Registry) -> None:
    taints = [
        {"key": "example.com/a", "effect": "NoSchedule"},
        {"key": "example.com/b", "effect": "None", "timeAdded": "2026-01-01T00:00:00Z"},
    ]
    obj = (
        await slices.create(None, body("s", devices=[{"name": "d", "taints": taints}]), OPTS)
    ).obj.copy()
    stamped = obj["spec"]["devices"][0]["taints"]
    assert stamped[0]["timeAdded"].endswith("Z")
    assert stamped[1]["timeAdded"] == "2026-01-01T00:00:00Z"


async def test_an_unchanged_taint_keeps_its_time_and_a_new_one_gets_one(
    slices: Registry,
) -> None:
    first = {"key": "example.com/a", "effect": "NoSchedule"}
    created = (
        await slices.create(None, body("s", devices=[{"name": "d", "taints": [first]}]), OPTS)
    ).obj.copy()
    when = created["spec"]["devices"][0]["taints"][0]["timeAdded"]

    resent = body("s", devices=[{"name": "d", "taints": [dict(first)]}])
    resent["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    same = (await slices.update(None, "s", resent, OPTS)).obj.copy()
    assert same["spec"]["devices"][0]["taints"][0]["timeAdded"] == when
    assert same["metadata"]["generation"] == 1

    second = {"key": "example.com/b", "effect": "NoExecute"}
    patch = {"spec": {"devices": [{"name": "d", "taints": [dict(first), second]}]}}
    changed = (await slices.patch(None, "s", orjson.dumps(patch), MERGE_PATCH, OPTS)).obj.copy()
    [kept, added] = changed["spec"]["devices"][0]["taints"]
    assert kept["timeAdded"] == when
    assert added["timeAdded"].endswith("Z")
    assert changed["metadata"]["generation"] == 2


async def test_a_dangling_include_stores_nothing(slices: Registry, store: SQLiteStore) -> None:
    before = store.revision
    bad = body("s", devices=[{"name": "d", "includes": ["nope"]}])
    with pytest.raises(StatusError) as info:
        await slices.create(None, bad, OPTS)
    assert (info.value.code, info.value.reason) == (422, "Invalid")
    assert [c["field"] for c in info.value.details["causes"]] == ["spec.devices[0].includes[0]"]
    assert store.revision == before
    assert await store.get(slices.resource.key(None, "s")) is None


async def test_updates_may_not_move_a_slice_to_another_driver(slices: Registry) -> None:
    created = (await slices.create(None, body("s"), OPTS)).obj.copy()
    moved = copy.deepcopy(created)
    moved["spec"]["driver"] = "other.example.com"
    with pytest.raises(StatusError) as info:
        await slices.update(None, "s", moved, OPTS)
    assert [c["field"] for c in info.value.details["causes"]] == ["spec.driver"]


async def test_field_selectors_and_table(slices: Registry) -> None:
    await slices.create(None, body("a"), OPTS)
    await slices.create(None, body("b", driver="net.example.com"), OPTS)
    everywhere = body("c", nodeName=None, allNodes=True)
    del everywhere["spec"]["nodeName"]
    await slices.create(None, everywhere, OPTS)
    getters = slices.strategy.field_getters()

    async def names(selector: str) -> list[str]:
        opts = ListOptions(field_selector=parse_field_selector(selector, getters))
        return [i.obj["metadata"]["name"] for i in (await slices.list(None, opts)).items]

    assert await names("spec.driver=gpu.example.com") == ["a", "c"]
    assert await names("spec.nodeName=b-node") == ["b"]
    assert await names("spec.nodeName=") == ["c"]
    assert await names("spec.pool.name=a-pool") == ["a"]

    listed = [i.obj for i in (await slices.list(None, ListOptions())).items]
    printed = table(slices.strategy.table_columns(), listed)
    assert [c["name"] for c in printed["columnDefinitions"]] == [
        "Name",
        "Node",
        "Driver",
        "Pool",
        "Age",
    ]
    assert [r["cells"][:4] for r in printed["rows"]] == [
        ["a", "a-node", "gpu.example.com", "a-pool"],
        ["b", "b-node", "net.example.com", "b-pool"],
        ["c", "", "gpu.example.com", "c-pool"],
    ]

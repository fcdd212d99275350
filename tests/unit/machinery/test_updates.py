"""The registry's one update path (``Registry.write``) and the ways a write computes its object
(``machinery.updates``), over a real SQLite store: every kind of write meets a stale
resourceVersion with the same 409, and concurrent writes of every kind lose nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import orjson
import pytest

from apiserver.kinds.resourceslicepatch import ResourceSlicePatchStrategy
from apiserver.machinery import (
    JSON_PATCH,
    STRATEGIC_MERGE_PATCH,
    Registry,
    StatusSubresource,
    WriteOptions,
    errors,
)
from apiserver.machinery.errors import StatusError
from apiserver.machinery.updates import Mutation
from apiserver.storage.sqlite import SQLiteStore
from apiserver.toolkit import MERGE_PATCH
from tests.unit.builders import rsp_body

GROUP = "resource.k8s.io"
API = f"{GROUP}/v1alpha3"
OPTS = WriteOptions()
ROUNDS = 3
WRITERS = 6


@pytest.fixture
def rsp(store: SQLiteStore) -> Registry:
    return Registry(ResourceSlicePatchStrategy.for_group(GROUP), store)


Write = Callable[[Registry, str], Awaitable[Any]]
"""One write of the object with a resourceVersion that is not the stored one."""
STALE = "1"


def _put(reg: Registry, name: str) -> Awaitable[Any]:
    return reg.update(None, name, rsp_body(name, resourceVersion=STALE, labels={"w": "put"}), OPTS)


def _merge(reg: Registry, name: str) -> Awaitable[Any]:
    patch = {"metadata": {"resourceVersion": STALE, "labels": {"w": "merge"}}}
    return reg.patch(None, name, orjson.dumps(patch), MERGE_PATCH, OPTS)


def _json(reg: Registry, name: str) -> Awaitable[Any]:
    patch = [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": STALE},
        {"op": "add", "path": "/metadata/labels", "value": {"w": "json"}},
    ]
    return reg.patch(None, name, orjson.dumps(patch), JSON_PATCH, OPTS)


def _strategic(reg: Registry, name: str) -> Awaitable[Any]:
    patch = {"metadata": {"resourceVersion": STALE, "labels": {"w": "strategic"}}}
    return reg.patch(None, name, orjson.dumps(patch), STRATEGIC_MERGE_PATCH, OPTS)


def _apply(reg: Registry, name: str) -> Awaitable[Any]:
    config = rsp_body(name, resourceVersion=STALE, labels={"w": "apply"})
    return reg.apply(None, name, config, replace(OPTS, field_manager="tester"))


def _status(reg: Registry, name: str) -> Awaitable[Any]:
    patch = {"metadata": {"resourceVersion": STALE}, "status": {"matchedDevices": 7}}
    return StatusSubresource(reg).patch(None, name, orjson.dumps(patch), MERGE_PATCH, OPTS)


@pytest.mark.parametrize("write", [_put, _merge, _json, _strategic, _apply, _status])
async def test_every_write_with_a_stale_resource_version_is_the_same_409(
    rsp: Registry, write: Write
) -> None:
    await rsp.create(None, rsp_body("p"), OPTS)
    await rsp.patch(None, "p", b'{"metadata":{"labels":{"moved":"on"}}}', MERGE_PATCH, OPTS)
    before = await rsp.get(None, "p")
    assert before.revision != int(STALE)
    with pytest.raises(StatusError) as info:
        await write(rsp, "p")
    assert (info.value.code, info.value.reason) == (409, "Conflict")
    assert errors.MODIFIED in info.value.message
    assert (await rsp.get(None, "p")).raw == before.raw


@pytest.mark.parametrize("write", [_put, _merge, _json, _strategic, _status])
async def test_writes_that_cannot_create_are_404_on_a_missing_object(
    rsp: Registry, write: Write
) -> None:
    with pytest.raises(StatusError) as info:
        await write(rsp, "absent")
    assert info.value.code == 404
    assert await rsp.store.get(rsp.resource.key(None, "absent")) is None


def _count(obj: dict[str, Any]) -> dict[str, Any]:
    """A mutation that computes from what is stored: a lost race must compute again."""
    annotations = obj["metadata"].setdefault("annotations", {})
    annotations["count"] = str(int(annotations.get("count", "0")) + 1)
    return obj


async def test_concurrent_writes_of_every_kind_lose_nothing(rsp: Registry) -> None:
    """Several rounds of merge patches, JSON patches, applies by distinct managers, status
    patches and read-modify-write mutations, all at once: each lands exactly once."""
    await rsp.create(None, rsp_body("p", annotations={"seed": "y"}), OPTS)
    status = StatusSubresource(rsp)
    for round_ in range(ROUNDS):
        writes: list[Awaitable[Any]] = []
        for i in range(WRITERS):
            key = f"r{round_}-{i}"
            merge = {"metadata": {"labels": {f"merge-{key}": "y"}}}
            writes.append(rsp.patch(None, "p", orjson.dumps(merge), MERGE_PATCH, OPTS))
            add = [{"op": "add", "path": f"/metadata/annotations/json-{key}", "value": "y"}]
            writes.append(rsp.patch(None, "p", orjson.dumps(add), JSON_PATCH, OPTS))
            config = {
                "apiVersion": API,
                "kind": "ResourceSlicePatch",
                "metadata": {"name": "p", "labels": {f"apply-{key}": "y"}},
            }
            manager = replace(OPTS, field_manager=f"manager-{key}")
            writes.append(rsp.apply(None, "p", config, manager))
            conditions = {"status": {"matchedDevices": round_ * WRITERS + i}}
            writes.append(status.patch(None, "p", orjson.dumps(conditions), MERGE_PATCH, OPTS))
            writes.append(rsp.write(None, "p", Mutation(_count), OPTS))
        results = await asyncio.gather(*writes)
        revisions = [r.obj.revision for r in results]
        assert len(set(revisions)) == len(revisions)  # each write is its own revision
    final = (await rsp.get(None, "p")).obj
    keys = [f"r{r}-{i}" for r in range(ROUNDS) for i in range(WRITERS)]
    labels = final["metadata"]["labels"]
    annotations = final["metadata"]["annotations"]
    assert all(labels[f"merge-{k}"] == "y" and labels[f"apply-{k}"] == "y" for k in keys)
    assert all(annotations[f"json-{k}"] == "y" for k in keys)
    assert annotations["count"] == str(ROUNDS * WRITERS)
    owners = {e["manager"] for e in final["metadata"]["managedFields"]}
    assert {f"manager-{k}" for k in keys} <= owners
    assert final["metadata"]["generation"] == 1  # nothing here touched the spec


async def test_concurrent_puts_of_one_version_one_wins(rsp: Registry) -> None:
    """PUTs that all replace the same resourceVersion: one is stored, every other is 409."""
    for round_ in range(ROUNDS):
        name = f"p{round_}"
        created = await rsp.create(None, rsp_body(name), OPTS)
        version = str(created.obj.revision)

        async def put(i: int, name: str = name, version: str = version) -> int:
            replacement = rsp_body(name, resourceVersion=version, labels={"writer": str(i)})
            try:
                await rsp.update(None, name, replacement, OPTS)
            except StatusError as err:
                return err.code
            return 200

        codes = await asyncio.gather(*(put(i) for i in range(WRITERS)))
        assert sorted(codes) == [200] + [409] * (WRITERS - 1)


async def test_concurrent_applies_to_a_missing_object_create_it_once(rsp: Registry) -> None:
    """Applies by distinct managers to an object that does not exist yet: one creates it,
    the others find it and merge into it, and every manager owns its label."""
    for round_ in range(ROUNDS):
        name = f"a{round_}"

        def config(i: int, name: str = name) -> dict[str, Any]:
            return rsp_body(name, labels={f"by-{i}": "y"})

        results = await asyncio.gather(
            *(
                rsp.apply(None, name, config(i), replace(OPTS, field_manager=f"m{i}"))
                for i in range(WRITERS)
            )
        )
        assert sorted(r.code for r in results) == [200] * (WRITERS - 1) + [201]
        final = (await rsp.get(None, name)).obj
        assert final["metadata"]["labels"] == {f"by-{i}": "y" for i in range(WRITERS)}
        assert {e["manager"] for e in final["metadata"]["managedFields"]} == {
            f"m{i}" for i in range(WRITERS)
        }

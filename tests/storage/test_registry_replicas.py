"""The registry's one update path across two replicas on one real etcd: two stores (two etcd
clients, one behind the watch cache, whose reads may lag), two registries of one kind.
Writes of every kind from both at once lose nothing, and a PUT race has one winner."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from dataclasses import replace
from typing import Any

import orjson
import pytest

from apiserver.kinds.resourceslicepatch import ResourceSlicePatchStrategy
from apiserver.machinery import JSON_PATCH, Registry, StatusSubresource, WriteOptions
from apiserver.machinery.errors import StatusError
from apiserver.machinery.updates import Mutation
from apiserver.storage.cacher import WatchCache
from apiserver.toolkit import MERGE_PATCH
from devtools.localetcd import LocalEtcd
from tests.unit.builders import rsp_body

from .conftest import etcd_store, unique_prefix

GROUP = "resource.k8s.io"
API = f"{GROUP}/v1alpha3"
OPTS = WriteOptions()
ROUNDS = 3
WRITERS = 4


@pytest.fixture
async def replicas(etcd: LocalEtcd) -> AsyncIterator[tuple[Registry, Registry]]:
    prefix = unique_prefix()
    stores = [etcd_store(etcd, prefix), WatchCache(etcd_store(etcd, prefix))]
    for store in stores:
        await store.start()
    strategy = ResourceSlicePatchStrategy.for_group(GROUP)
    try:
        yield Registry(strategy, stores[0]), Registry(strategy, stores[1])
    finally:
        for store in stores:
            await store.close()


def _count(obj: dict[str, Any]) -> dict[str, Any]:
    annotations = obj["metadata"].setdefault("annotations", {})
    annotations["count"] = str(int(annotations.get("count", "0")) + 1)
    return obj


def _writes(reg: Registry, key: str, n: int) -> list[Awaitable[Any]]:
    """One write of each kind, by writer ``key``."""
    merge = {"metadata": {"labels": {f"merge-{key}": "y"}}}
    add = [{"op": "add", "path": f"/metadata/annotations/json-{key}", "value": "y"}]
    config = {"apiVersion": API, "kind": "ResourceSlicePatch", "metadata": {"name": "p"}}
    config["metadata"]["labels"] = {f"apply-{key}": "y"}
    status = {"status": {"matchedDevices": n}}
    return [
        reg.patch(None, "p", orjson.dumps(merge), MERGE_PATCH, OPTS),
        reg.patch(None, "p", orjson.dumps(add), JSON_PATCH, OPTS),
        reg.apply(None, "p", config, replace(OPTS, field_manager=f"manager-{key}")),
        StatusSubresource(reg).patch(None, "p", orjson.dumps(status), MERGE_PATCH, OPTS),
        reg.write(None, "p", Mutation(_count), OPTS),
    ]


async def test_writes_of_every_kind_from_two_replicas_lose_nothing(
    replicas: tuple[Registry, Registry],
) -> None:
    first, second = replicas
    await first.create(None, rsp_body("p", annotations={"seed": "y"}), OPTS)
    keys = []
    for round_ in range(ROUNDS):
        writes: list[Awaitable[Any]] = []
        for i in range(WRITERS):
            for side, reg in (("a", first), ("b", second)):
                key = f"{side}{round_}-{i}"
                keys.append(key)
                writes += _writes(reg, key, round_ * WRITERS + i)
        await asyncio.gather(*writes)
    final = (await first.get(None, "p")).obj
    labels = final["metadata"]["labels"]
    annotations = final["metadata"]["annotations"]
    assert all(labels[f"merge-{k}"] == "y" and labels[f"apply-{k}"] == "y" for k in keys)
    assert all(annotations[f"json-{k}"] == "y" for k in keys)
    assert annotations["count"] == str(len(keys))


async def test_a_put_race_across_replicas_has_one_winner(
    replicas: tuple[Registry, Registry],
) -> None:
    first, second = replicas
    for round_ in range(ROUNDS):
        name = f"put-{round_}"
        version = str((await first.create(None, rsp_body(name), OPTS)).obj.revision)

        async def put(reg: Registry, i: int, name: str = name, version: str = version) -> int:
            try:
                await reg.update(
                    None, name, rsp_body(name, resourceVersion=version, labels={"w": str(i)}), OPTS
                )
            except StatusError as err:
                return err.code
            return 200

        codes = await asyncio.gather(
            *(put(reg, i) for i in range(WRITERS) for reg in (first, second))
        )
        assert sorted(codes) == [200] + [409] * (2 * WRITERS - 1)

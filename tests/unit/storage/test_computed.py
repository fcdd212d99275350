"""Indexed lists of a computed store: the keys an index names equal a scan's over random
change sequences, and a list that pins the device's driver, pool and name builds only the
objects it may return, with the same answer as filtering every device."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from apiserver.devices import DeviceStore
from apiserver.kinds.device import DeviceStrategy
from apiserver.machinery import ComputedResource, ListOptions, parse_field_selector
from apiserver.storage.computed import ComputedStore
from tests.unit.builders import DRIVER, Setup, device, slice_obj, start_view

STRATEGY = DeviceStrategy.for_group("resource.k8s.io")
Value = tuple[str, str]


def _store() -> ComputedStore[Value]:
    return ComputedStore(
        lambda value, revision: {"metadata": {"name": value[0]}},
        what="a test view",
        indexes={"colour": lambda v: v[0], "size": lambda v: v[1]},
    )


def _expected(values: dict[str, Value], pinned: dict[str, str]) -> list[str]:
    at = {"colour": 0, "size": 1}
    return sorted(k for k, v in values.items() if all(v[at[f]] == x for f, x in pinned.items()))


@pytest.mark.parametrize("seed", range(8))
def test_the_index_names_the_keys_a_scan_finds(seed: int) -> None:
    rng = random.Random(seed)
    colours, sizes = ["red", "green", "blue"], ["s", "m", "l"]
    store = _store()
    values: dict[str, Value] = {}
    revision = 1
    for step in range(60):
        if step % 20 == 0:  # now and then the whole state again
            values = {f"k{i}": (rng.choice(colours), rng.choice(sizes)) for i in range(12)}
            store.replace_all(values.items(), revision)
        else:
            changes: list[tuple[str, Value | None]] = []
            for key in rng.sample([f"k{i}" for i in range(16)], 3):
                if rng.random() < 0.3:
                    values.pop(key, None)
                    changes.append((key, None))
                else:
                    value = (rng.choice(colours), rng.choice(sizes))
                    values[key] = value
                    changes.append((key, value))
            store.commit(revision, changes)
        revision += 1
        for pinned in (
            {"colour": rng.choice(colours)},
            {"size": rng.choice(sizes)},
            {"colour": rng.choice(colours), "size": rng.choice(sizes)},
            {"colour": "purple"},
        ):
            assert store.indexed(pinned) == _expected(values, pinned), (step, pinned)
    assert store.indexed({"weight": "1"}) is None  # not an indexed field


class Counted:
    def __init__(self, setup: Setup, store: DeviceStore) -> None:
        self.setup = setup
        self.store = store
        self.built = 0
        build = store._build

        def counting(value: Any, revision: int) -> dict[str, Any]:
            self.built += 1
            return build(value, revision)

        store._build = counting
        self.resource = ComputedResource(STRATEGY, store)

    async def names(self, fields: str, limit: int = 0) -> list[str]:
        selector = parse_field_selector(fields, self.resource.field_getters)
        listed = await self.resource.list(None, ListOptions(field_selector=selector, limit=limit))
        return [i.obj["metadata"]["name"] for i in listed.items]


@pytest.fixture
async def counted() -> AsyncIterator[Counted]:
    slices = [
        slice_obj(f"node-{n}", [device(f"gpu-{i}") for i in range(10)], node=f"node-{n}")
        for n in range(20)
    ]
    slices.append(slice_obj("fabric", [device("gpu-0")], driver="nic.example.com", allNodes=True))
    setup = await start_view(slices)
    store = DeviceStore(STRATEGY.resource)
    setup.view.subscribe(store)
    yield Counted(setup, store)
    await store.close()
    await setup.close()


async def test_one_device_is_found_without_building_the_others(counted: Counted) -> None:
    every = await counted.names("")
    assert len(every) == 201
    counted.built = 0
    one = f"spec.driver={DRIVER},spec.pool.name=node-7,spec.device=gpu-3"
    assert await counted.names(one) == ["node-7.gpu-3"]
    assert counted.built == 1
    counted.built = 0
    by_name = await counted.names("spec.device=gpu-0")
    assert by_name == sorted(n for n in every if n.endswith(".gpu-0"))
    assert counted.built == 21
    assert await counted.names(f"spec.driver={DRIVER},spec.pool.name=nope") == []


async def test_a_pinned_list_equals_filtering_every_device(counted: Counted) -> None:
    """Indexed fields and others together (spec.nodeName is matched, not indexed)."""
    for fields, expected in (
        ("spec.pool.name=node-3,spec.nodeName=node-3", [f"node-3.gpu-{i}" for i in range(10)]),
        ("spec.pool.name=node-3,spec.nodeName=node-4", []),
        ("spec.driver=nic.example.com", ["fabric.gpu-0"]),
        ("spec.device=gpu-9,spec.device!=gpu-9", []),
    ):
        assert await counted.names(fields) == expected, fields


async def test_more_matches_than_a_page_are_paged_by_the_scan(counted: Counted) -> None:
    first = await counted.names("spec.device=gpu-0", limit=5)
    assert len(first) == 5
    assert first == sorted(first)


async def test_the_index_follows_the_view(counted: Counted) -> None:
    setup = counted.setup
    setup.slices.put(slice_obj("node-7", [device("gpu-x")], node="node-7"))
    await setup.settle()
    assert await counted.names(f"spec.driver={DRIVER},spec.pool.name=node-7") == ["node-7.gpu-x"]
    assert await counted.names("spec.device=gpu-3,spec.pool.name=node-7") == []
    setup.slices.remove("node-7")
    await setup.settle()
    assert await counted.names("spec.pool.name=node-7") == []

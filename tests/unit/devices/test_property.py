"""Property: after any sequence of slice, patch and class additions, updates and deletions,
the incrementally maintained view — and the Device store fed by it — equal a view built
from scratch over the same objects."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apiserver.devices import DeviceStore, DeviceView, PatchReport, snapshot
from apiserver.kinds.device import DeviceStrategy
from apiserver.sources import MemorySource, RevisionClock
from tests.unit.builders import NEW, NULL, OLD, class_obj, patch_obj, slice_obj

GPU, NIC = "gpu.example.com", "nic.example.com"
POOLS = ("node-1", "node-2")
DEVICES = ("d0", "d1", "d2")
SLICES = ("s0", "s1", "s2")
PATCHES = ("p0", "p1")
CLASSES = ("c0", "c1")
SELECTORS = (
    f'device.driver == "{GPU}"',
    f'device.attributes["{GPU}"].model == "a"',  # fails where there is no model
    f'device.attributes["{GPU}"].index > 0',
    f'has(device.attributes["{GPU}"].model) && '
    f"device.capacity['{GPU}'].mem.compareTo(quantity('1Gi')) > 0",
)
BROKEN = "device.attributes["  # never compiles
FILTERS: tuple[dict[str, Any], ...] = (
    {},
    {"driver": GPU},
    {"pool": "node-1"},
    {"driver": GPU, "device": "d0"},
    {"selectors": [SELECTORS[1]]},
    {"driver": GPU, "selectors": [SELECTORS[2], SELECTORS[3]]},
    {"class_name": "c0"},
    {"class_name": "c1", "pool": "node-2"},
    {"class_name": "missing"},
    {"selectors": [BROKEN]},
)
RESOURCE = DeviceStrategy.for_group("resource.k8s.io").resource


def _attributes() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "model": st.sampled_from(["a", "b"]).map(lambda v: {"string": v}),
            "index": st.integers(0, 2).map(lambda v: {"int": v}),
            "example.com/rack": st.sampled_from(["r1", "r2"]).map(lambda v: {"string": v}),
        },
    )


def _taints() -> st.SearchStrategy[list[dict[str, Any]]]:
    """Few keys, effects and values, so that patches and devices often share a key and effect."""
    return st.lists(
        st.builds(
            lambda key, effect, value: {
                "key": key,
                "effect": effect,
                **({"value": value} if value else {}),
            },
            st.sampled_from(["x.io/a", "x.io/b"]),
            st.sampled_from(["NoSchedule", "NoExecute"]),
            st.sampled_from([None, "1", "2"]),
        ),
        max_size=2,
    )


def _device() -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda name, attributes, mem, includes, taints: {
            "name": name,
            **({"attributes": attributes} if attributes else {}),
            **({"capacity": {"mem": {"value": mem}}} if mem else {}),
            **({"includes": ["m"]} if includes else {}),
            **({"taints": taints} if taints else {}),
        },
        st.sampled_from(DEVICES),
        _attributes(),
        st.sampled_from([None, "512Mi", "2Gi"]),
        st.booleans(),
        _taints(),
    )


slices = st.builds(
    lambda name, driver, pool, devices, generation, mixin: slice_obj(
        name,
        devices,
        driver=driver,
        pool=pool,
        generation=generation,
        mixins={"device": [{"name": "m", "attributes": {"model": {"string": mixin}}}]},
    ),
    st.sampled_from(SLICES),
    st.sampled_from([GPU, GPU, NIC]),
    st.sampled_from(POOLS),
    st.lists(_device(), min_size=1, max_size=3),
    st.integers(1, 2),
    st.sampled_from(["a", "b"]),
)

_patch_value = st.one_of(
    st.just(NULL),
    st.sampled_from(["x", "y"]).map(lambda v: {"string": v}),
    st.integers(0, 3).map(lambda v: {"int": v}),
)

patches = st.builds(
    lambda name, priority, created, flt, attributes, capacity, taints: patch_obj(
        name,
        priority=priority,
        created=created,
        attributes=attributes,
        capacity=capacity,
        taints=taints or None,
        **flt,
    ),
    st.sampled_from(PATCHES),
    st.sampled_from([None, 0, 1]),
    st.sampled_from([OLD, NEW]),
    st.sampled_from(FILTERS),
    st.dictionaries(
        st.sampled_from([f"{GPU}/model", f"{GPU}/index", "example.com/rack", f"{NIC}/model"]),
        _patch_value,
        max_size=3,
    ),
    st.dictionaries(
        st.sampled_from([f"{GPU}/mem", "example.com/bw"]),
        st.sampled_from(["0", "4Gi"]).map(lambda v: {"value": v}),
        max_size=2,
    ),
    _taints(),
)

classes = st.builds(
    lambda name, selectors: class_obj(name, *selectors),
    st.sampled_from(CLASSES),
    st.lists(st.sampled_from(SELECTORS), max_size=2),
)

# Changes to what exists: the same patch filter with other values, one device of a slice
# changed and the rest kept, another selector for a class.
patch_changes = st.tuples(
    st.sampled_from(PATCHES),
    st.sampled_from([None, 0, 1, 2]),
    st.dictionaries(st.sampled_from([f"{GPU}/model", f"{GPU}/new"]), _patch_value, max_size=2),
    _taints(),
)
slice_changes = st.tuples(st.sampled_from(SLICES), st.integers(0, 2), _attributes())

operations = st.lists(
    st.one_of(
        st.tuples(st.just("put-slice"), slices),
        st.tuples(st.just("change-slice"), slice_changes),
        st.tuples(st.just("remove-slice"), st.sampled_from(SLICES)),
        st.tuples(st.just("put-patch"), patches),
        st.tuples(st.just("change-patch"), patch_changes),
        st.tuples(st.just("remove-patch"), st.sampled_from(PATCHES)),
        st.tuples(st.just("put-class"), classes),
        st.tuples(st.just("remove-class"), st.sampled_from(CLASSES)),
    ),
    min_size=1,
    max_size=30,
)

worlds = st.tuples(
    st.lists(slices, min_size=1, max_size=3, unique_by=lambda s: s["metadata"]["name"]),
    st.lists(classes, max_size=2, unique_by=lambda c: c["metadata"]["name"]),
    st.lists(patches, max_size=2, unique_by=lambda p: p["metadata"]["name"]),
)
"""The objects there are when the view starts."""


def _changed_patch(current: dict[str, Any], change: tuple[str, Any, Any, Any]) -> dict[str, Any]:
    _, priority, attributes, taints = change
    new = copy.deepcopy(current)
    devices = new["spec"]["devices"]
    devices.pop("priority", None)
    if priority is not None:
        devices["priority"] = priority
    devices["attributes"] = attributes
    devices["taints"] = taints
    return new


def _changed_slice(current: dict[str, Any], change: tuple[str, int, Any]) -> dict[str, Any]:
    _, index, attributes = change
    new = copy.deepcopy(current)
    devices = new["spec"]["devices"]
    if devices:
        devices[index % len(devices)]["attributes"] = attributes
    return new


def _sources(
    clock: RevisionClock, slices: Any = (), classes: Any = (), patches: Any = ()
) -> tuple[MemorySource, MemorySource, MemorySource]:
    return (
        MemorySource("resourceslices", slices, clock=clock),
        MemorySource("deviceclasses", classes, clock=clock),
        MemorySource("resourceslicepatches", patches, clock=clock),
    )


def _reports(view: DeviceView, names: Any) -> dict[str, PatchReport | None]:
    return {name: view.patch_report(name) for name in names}


async def _objects(store: DeviceStore) -> dict[str, Any]:
    """The store's objects without their resourceVersions (those record history)."""
    page = await store.list(RESOURCE.key_prefix())
    out = {}
    for item in page.items:
        obj = item.copy()
        del obj["metadata"]["resourceVersion"]
        out[item.key] = obj
    return out


async def _scenario(
    ops: list[tuple[str, Any]], world: tuple[list[Any], list[Any], list[Any]], settle: bool
) -> None:
    clock = RevisionClock()
    sources = _sources(clock, *world)
    incremental = DeviceView(*sources, budget=0.0)
    store = DeviceStore(RESOURCE, window=5)
    incremental.subscribe(store)
    for source in sources:
        await source.start()
    await incremental.start()
    await incremental.wait_idle()
    slice_source, class_source, patch_source = sources
    for op, arg in ops:
        if op == "put-slice":
            slice_source.put(arg)
        elif op == "change-slice":
            if (current := slice_source.get(arg[0])) is not None:
                slice_source.put(_changed_slice(current, arg))
        elif op == "change-patch":
            if (current := patch_source.get(arg[0])) is not None:
                patch_source.put(_changed_patch(current, arg))
        elif op == "remove-slice":
            slice_source.remove(arg)
        elif op == "put-patch":
            patch_source.put(arg)
        elif op == "remove-patch":
            patch_source.remove(arg)
        elif op == "put-class":
            class_source.put(arg)
        else:
            class_source.remove(arg)
        if settle:  # one change at a time, or all queued at once
            await incremental.wait_idle()
    await incremental.wait_idle()

    fresh_sources = _sources(
        RevisionClock(),
        slices=slice_source.items(),
        classes=class_source.items(),
        patches=patch_source.items(),
    )
    fresh = DeviceView(*fresh_sources)
    fresh_store = DeviceStore(RESOURCE)
    fresh.subscribe(fresh_store)
    for source in fresh_sources:
        await source.start()
    await fresh.start()
    await fresh.wait_idle()

    assert snapshot(incremental.devices()) == snapshot(fresh.devices())
    assert _reports(incremental, PATCHES) == _reports(fresh, PATCHES)
    assert await _objects(store) == await _objects(fresh_store)
    for view in (incremental, fresh):
        await view.close()
    for source in (*sources, *fresh_sources):
        await source.close()


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(ops=operations, world=worlds, settle=st.booleans())
def test_incremental_updates_equal_a_full_recompute(
    ops: list[tuple[str, Any]], world: tuple[list[Any], list[Any], list[Any]], settle: bool
) -> None:
    asyncio.run(_scenario(ops, world, settle))

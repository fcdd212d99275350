"""KEP-5027 merge rules, case by case: what a device looks like once patches apply to it."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from apiserver.devices import PatchMark, compile_patch, local_name, merge
from tests.unit.builders import (
    DRIVER,
    NEW,
    NULL,
    OLD,
    Setup,
    attrs,
    device,
    patch_obj,
    slice_obj,
    start_view,
)

Start = Callable[..., Awaitable[Setup]]


@pytest.fixture
async def view() -> AsyncIterator[Start]:
    """Start a view over one slice (node-1: gpu-0 a100, gpu-1 h100) plus the given patches."""
    started: list[Setup] = []

    async def start(*patches: dict[str, Any], slices: list[dict[str, Any]] | None = None) -> Setup:
        setup = await start_view(
            slices
            if slices is not None
            else [
                slice_obj(
                    "node-1",
                    [
                        device("gpu-0", {"memory": "80Gi"}, model="a100", index=0),
                        device("gpu-1", {"memory": "40Gi"}, model="h100", index=1),
                    ],
                )
            ],
            patches=patches,
        )
        started.append(setup)
        return setup

    yield start
    for setup in started:
        await setup.close()


def _patched(
    raw: dict[str, Any], *patches: dict[str, Any]
) -> tuple[dict[str, Any], tuple[PatchMark, ...]]:
    compiled = sorted((compile_patch(p) for p in patches), key=lambda c: c.order)
    return merge(raw, DRIVER, compiled)


# -- one patch -------------------------------------------------------------------------


async def test_a_patch_adds_an_attribute(view: Start) -> None:
    setup = await view(patch_obj("p", attributes={f"{DRIVER}/maintenance": {"bool": True}}))
    for name in ("node-1.gpu-0", "node-1.gpu-1"):
        assert setup.device(name)["attributes"]["maintenance"] == {"bool": True}
        assert setup.device(name)["attributes"]["model"]  # the driver's attributes stay


async def test_a_patch_overrides_the_drivers_value(view: Start) -> None:
    setup = await view(
        patch_obj("p", device="gpu-0", attributes={f"{DRIVER}/model": {"string": "a100-sxm"}})
    )
    assert setup.device("node-1.gpu-0")["attributes"]["model"] == {"string": "a100-sxm"}
    assert setup.device("node-1.gpu-1")["attributes"]["model"] == {"string": "h100"}


def test_own_domain_is_unqualified_on_the_device_other_domains_stay_qualified() -> None:
    raw = device("gpu-0", model="a100")
    patched, _ = _patched(
        raw,
        patch_obj(
            "p",
            attributes={
                f"{DRIVER}/model": {"string": "b"},
                "example.com/rack": {"string": "r1"},
            },
        ),
    )
    assert patched["attributes"] == {"model": {"string": "b"}, "example.com/rack": {"string": "r1"}}
    assert local_name(f"{DRIVER}/model", DRIVER) == "model"
    assert local_name("example.com/rack", DRIVER) == "example.com/rack"


async def test_null_removes_an_attribute(view: Start) -> None:
    setup = await view(patch_obj("p", device="gpu-1", attributes={f"{DRIVER}/model": NULL}))
    assert "model" not in setup.device("node-1.gpu-1")["attributes"]
    assert setup.device("node-1.gpu-1")["attributes"]["index"] == {"int": 1}
    assert setup.device("node-1.gpu-0")["attributes"]["model"] == {"string": "a100"}


def test_null_for_an_absent_attribute_changes_nothing_but_is_still_decided() -> None:
    raw = device("gpu-0", model="a100")
    patched, marks = _patched(raw, patch_obj("p", attributes={"example.com/x": NULL}))
    assert patched["attributes"] == raw["attributes"]
    assert marks == (PatchMark("p", 0, ("example.com/x",), ()),)


def test_null_removes_the_qualified_spelling_too() -> None:
    raw = {"name": "d", "attributes": {f"{DRIVER}/model": {"string": "a"}}}
    patched, _ = _patched(raw, patch_obj("p", attributes={f"{DRIVER}/model": NULL}))
    assert patched["attributes"] == {}


async def test_capacity_entries_override_the_whole_capacity(view: Start) -> None:
    setup = await view(
        patch_obj("p", device="gpu-0", capacity={f"{DRIVER}/memory": {"value": "0"}})
    )
    assert setup.device("node-1.gpu-0")["capacity"] == {"memory": {"value": "0"}}
    assert setup.device("node-1.gpu-1")["capacity"] == {"memory": {"value": "40Gi"}}


def test_capacity_replaces_value_and_request_policy() -> None:
    raw = {
        "name": "d",
        "capacity": {"memory": {"value": "8Gi", "requestPolicy": {"default": "1Gi"}}},
    }
    patched, marks = _patched(
        raw,
        patch_obj("p", capacity={f"{DRIVER}/memory": {"value": "4Gi"}, "x.io/bw": {"value": "1"}}),
    )
    assert patched["capacity"] == {"memory": {"value": "4Gi"}, "x.io/bw": {"value": "1"}}
    assert marks[0].capacity == (f"{DRIVER}/memory", "x.io/bw")


def test_the_input_device_is_never_changed() -> None:
    raw = device("gpu-0", {"memory": "1Gi"}, model="a100")
    before = copy.deepcopy(raw)
    _patched(
        raw,
        patch_obj(
            "p",
            attributes={f"{DRIVER}/model": NULL, "x.io/y": {"int": 1}},
            capacity={f"{DRIVER}/memory": {"value": "0"}},
        ),
    )
    assert raw == before


def test_no_patch_returns_the_device_itself() -> None:
    raw = device("gpu-0", model="a100")
    patched, marks = merge(raw, DRIVER, [])
    assert patched is raw
    assert marks == ()


# -- several patches -----------------------------------------------------------------------


async def test_higher_priority_wins(view: Start) -> None:
    setup = await view(
        patch_obj("low", priority=1, attributes={f"{DRIVER}/state": {"string": "low"}}),
        patch_obj(
            "high", priority=9, created=NEW, attributes={f"{DRIVER}/state": {"string": "high"}}
        ),
    )
    state = setup.view.device("node-1.gpu-0")
    assert state is not None
    assert state.device["attributes"]["state"] == {"string": "high"}
    assert [m.name for m in state.patched_by] == ["high", "low"]
    assert state.patched_by[0].attributes == (f"{DRIVER}/state",)
    assert state.patched_by[1].attributes == ()  # matched, but decided nothing


async def test_equal_priority_the_older_patch_wins(view: Start) -> None:
    setup = await view(
        patch_obj(
            "newer", priority=3, created=NEW, attributes={f"{DRIVER}/state": {"string": "newer"}}
        ),
        patch_obj(
            "older", priority=3, created=OLD, attributes={f"{DRIVER}/state": {"string": "older"}}
        ),
    )
    assert setup.device("node-1.gpu-0")["attributes"]["state"] == {"string": "older"}


async def test_equal_priority_and_age_the_name_decides(view: Start) -> None:
    setup = await view(
        patch_obj("b", attributes={f"{DRIVER}/state": {"string": "b"}}),
        patch_obj("a", attributes={f"{DRIVER}/state": {"string": "a"}}),
    )
    assert setup.device("node-1.gpu-0")["attributes"]["state"] == {"string": "a"}


async def test_unset_priority_is_zero(view: Start) -> None:
    setup = await view(
        patch_obj("unset", created=OLD, attributes={f"{DRIVER}/state": {"string": "unset"}}),
        patch_obj(
            "negative", priority=-1, created=OLD, attributes={f"{DRIVER}/state": {"string": "neg"}}
        ),
    )
    assert setup.device("node-1.gpu-0")["attributes"]["state"] == {"string": "unset"}


async def test_each_entry_is_decided_on_its_own(view: Start) -> None:
    """A lower-priority patch still decides the attributes the higher one leaves alone."""
    setup = await view(
        patch_obj("high", priority=5, attributes={f"{DRIVER}/a": {"int": 1}}),
        patch_obj(
            "low", priority=1, attributes={f"{DRIVER}/a": {"int": 2}, f"{DRIVER}/b": {"int": 2}}
        ),
    )
    attributes = setup.device("node-1.gpu-0")["attributes"]
    assert attributes["a"] == {"int": 1}
    assert attributes["b"] == {"int": 2}


async def test_a_higher_null_beats_a_lower_value_and_the_reverse(view: Start) -> None:
    setup = await view(
        patch_obj("remove", priority=5, device="gpu-0", attributes={f"{DRIVER}/model": NULL}),
        patch_obj("set", priority=1, attributes={f"{DRIVER}/model": {"string": "x"}}),
        patch_obj(
            "keep", priority=9, device="gpu-1", attributes={f"{DRIVER}/model": {"string": "y"}}
        ),
        patch_obj("drop", priority=2, device="gpu-1", attributes={f"{DRIVER}/model": NULL}),
    )
    assert "model" not in setup.device("node-1.gpu-0")["attributes"]
    assert setup.device("node-1.gpu-1")["attributes"]["model"] == {"string": "y"}


async def test_patches_apply_to_the_flattened_device(view: Start) -> None:
    """Mixins first (KEP-5234), then patches: a patch overrides what a mixin contributed."""
    mixin_slice = slice_obj(
        "node-2",
        [{"name": "gpu-0", "includes": ["a100"], "attributes": attrs(index=0)}],
        mixins={"device": [{"name": "a100", "attributes": attrs(model="a100", family="ampere")}]},
    )
    setup = await view(
        patch_obj("p", attributes={f"{DRIVER}/family": {"string": "patched"}}),
        slices=[mixin_slice],
    )
    patched = setup.device("node-2.gpu-0")
    assert "includes" not in patched
    assert patched["attributes"] == attrs(index=0, model="a100", family="patched")


# -- taints ------------------------------------------------------------------------------


def taint(key: str, effect: str = "NoSchedule", value: str | None = None) -> dict[str, Any]:
    out = {"key": key, "effect": effect, "timeAdded": "2026-01-01T00:00:00Z"}
    if value is not None:
        out["value"] = value
    return out


def test_a_patch_adds_its_taints_after_the_devices_own() -> None:
    raw = {**device("gpu-0"), "taints": [taint("driver.example.com/hot", "None")]}
    patched, marks = _patched(
        raw, patch_obj("p", taints=[taint("ops.example.com/broken", value="yes")])
    )
    assert patched["taints"] == [
        taint("driver.example.com/hot", "None"),
        taint("ops.example.com/broken", value="yes"),
    ]
    assert marks == (PatchMark("p", 0, taints=("ops.example.com/broken=yes:NoSchedule",)),)


def test_taints_of_several_patches_are_a_union() -> None:
    patched, marks = _patched(
        device("gpu-0"),
        patch_obj("a", priority=2, taints=[taint("x.io/a")]),
        patch_obj("b", priority=1, taints=[taint("x.io/b", "NoExecute")]),
    )
    assert patched["taints"] == [taint("x.io/a"), taint("x.io/b", "NoExecute")]
    assert [m.taints for m in marks] == [("x.io/a:NoSchedule",), ("x.io/b:NoExecute",)]


def test_same_key_and_effect_the_higher_precedence_patch_wins() -> None:
    patched, marks = _patched(
        device("gpu-0"),
        patch_obj("low", priority=1, taints=[taint("x.io/t", value="low")]),
        patch_obj("high", priority=5, created=NEW, taints=[taint("x.io/t", value="high")]),
    )
    assert patched["taints"] == [taint("x.io/t", value="high")]
    assert [(m.name, m.taints) for m in marks] == [
        ("high", ("x.io/t=high:NoSchedule",)),
        ("low", ()),  # matched, but its taint was decided by "high"
    ]


def test_same_key_other_effect_is_another_taint() -> None:
    patched, _ = _patched(
        device("gpu-0"),
        patch_obj("a", taints=[taint("x.io/t", "NoSchedule")]),
        patch_obj("b", taints=[taint("x.io/t", "NoExecute")]),
    )
    assert patched["taints"] == [taint("x.io/t", "NoSchedule"), taint("x.io/t", "NoExecute")]


def test_a_patch_taint_replaces_the_devices_own_with_the_same_key_and_effect() -> None:
    raw = {**device("gpu-0"), "taints": [taint("x.io/t", value="driver"), taint("x.io/u")]}
    before = copy.deepcopy(raw)
    patched, _ = _patched(raw, patch_obj("p", taints=[taint("x.io/t", value="admin")]))
    assert patched["taints"] == [taint("x.io/u"), taint("x.io/t", value="admin")]
    assert raw == before


def test_a_patch_without_taints_leaves_the_devices_own() -> None:
    raw = {**device("gpu-0", model="a"), "taints": [taint("x.io/t")]}
    patched, marks = _patched(raw, patch_obj("p", attributes={"x.io/y": {"int": 1}}))
    assert patched["taints"] is raw["taints"]
    assert marks[0].taints == ()


async def test_taints_reach_the_device_view_and_go_with_the_patch(view: Start) -> None:
    setup = await view(patch_obj("p", device="gpu-1", taints=[taint("x.io/maintenance")]))
    assert setup.device("node-1.gpu-1")["taints"] == [taint("x.io/maintenance")]
    assert "taints" not in setup.device("node-1.gpu-0")
    state = setup.view.device("node-1.gpu-1")
    assert state is not None
    assert state.patched_by[0].taints == ("x.io/maintenance:NoSchedule",)


async def test_changing_only_a_patchs_taints_remerges_its_devices(view: Start) -> None:
    """The filter is unchanged, so the patch is not re-evaluated, but its devices are merged
    again with the new taints; deleting the patch takes them away."""
    setup = await view(patch_obj("p", device="gpu-0", taints=[taint("x.io/a")]))
    setup.patches.put(patch_obj("p", device="gpu-0", taints=[taint("x.io/b", "NoExecute")]))
    await setup.settle()
    assert setup.device("node-1.gpu-0")["taints"] == [taint("x.io/b", "NoExecute")]
    setup.patches.remove("p")
    await setup.settle()
    assert "taints" not in setup.device("node-1.gpu-0")

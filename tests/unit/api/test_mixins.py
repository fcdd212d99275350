"""KEP-5234 flattening: the order and override rules case by case, and a property: a slice
written with mixins flattens to the same thing as the slice written out in full."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apiserver.api.resource import ResourceSlice, flatten_slice, validate_resource_slice
from apiserver.api.resource.mixins import merged, sources

BASE = {
    "driver": "gpu.example.com",
    "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
    "nodeName": "node-1",
}


def slice_spec(**fields: Any) -> dict[str, Any]:
    return {**copy.deepcopy(BASE), **fields}


def one_device(spec: dict[str, Any]) -> dict[str, Any]:
    [device] = flatten_slice(spec)["devices"]
    return device


def attr(value: str) -> dict[str, Any]:
    return {"string": value}


# -- the rules, case by case --------------------------------------------------------------


def test_mixins_apply_in_the_order_listed_so_the_later_one_wins() -> None:
    mixins = {
        "device": [
            {"name": "a", "attributes": {"model": attr("from-a"), "only-a": attr("a")}},
            {"name": "b", "attributes": {"model": attr("from-b"), "only-b": attr("b")}},
        ]
    }
    forwards = one_device(
        slice_spec(devices=[{"name": "d", "includes": ["a", "b"]}], mixins=mixins)
    )
    backwards = one_device(
        slice_spec(devices=[{"name": "d", "includes": ["b", "a"]}], mixins=mixins)
    )
    assert forwards["attributes"] == {
        "model": attr("from-b"),
        "only-a": attr("a"),
        "only-b": attr("b"),
    }
    assert backwards["attributes"]["model"] == attr("from-a")


def test_the_device_s_own_values_win_over_every_mixin() -> None:
    device = one_device(
        slice_spec(
            devices=[
                {
                    "name": "d",
                    "includes": ["a", "b"],
                    "attributes": {"model": attr("own")},
                    "capacity": {"memory": {"value": "1Gi"}},
                }
            ],
            mixins={
                "device": [
                    {"name": "a", "attributes": {"model": attr("a")}},
                    {
                        "name": "b",
                        "attributes": {"model": attr("b")},
                        "capacity": {"memory": {"value": "80Gi"}, "cores": {"value": "8"}},
                    },
                ]
            },
        )
    )
    assert device["attributes"] == {"model": attr("own")}
    assert device["capacity"] == {"memory": {"value": "1Gi"}, "cores": {"value": "8"}}


def test_attributes_and_capacity_merge_separately() -> None:
    """An attribute and a capacity of the same name are different entries."""
    device = one_device(
        slice_spec(
            devices=[{"name": "d", "includes": ["m"], "attributes": {"memory": attr("hbm")}}],
            mixins={"device": [{"name": "m", "capacity": {"memory": {"value": "80Gi"}}}]},
        )
    )
    assert device["attributes"] == {"memory": attr("hbm")}
    assert device["capacity"] == {"memory": {"value": "80Gi"}}


def test_counter_sets_include_counter_set_mixins() -> None:
    spec = slice_spec(
        sharedCounters=[
            {"name": "gpu-0", "includes": ["base", "big"], "counters": {"sm": {"value": "4"}}}
        ],
        mixins={
            "counterSet": [
                {"name": "base", "counters": {"memory": {"value": "40Gi"}, "sm": {"value": "8"}}},
                {"name": "big", "counters": {"memory": {"value": "80Gi"}}},
            ]
        },
    )
    assert flatten_slice(spec)["sharedCounters"] == [
        {"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}, "sm": {"value": "4"}}}
    ]


def test_counter_consumptions_include_their_mixins_and_keep_their_counter_set() -> None:
    device = one_device(
        slice_spec(
            devices=[
                {
                    "name": "d",
                    "consumesCounters": [
                        {
                            "counterSet": "gpu-0",
                            "includes": ["half", "quarter"],
                            "counters": {"sm": {"value": "1"}},
                        },
                        {"counterSet": "gpu-1", "includes": ["half"]},
                    ],
                }
            ],
            mixins={
                "deviceCounterConsumption": [
                    {
                        "name": "half",
                        "counters": {"memory": {"value": "40Gi"}, "sm": {"value": "4"}},
                    },
                    {"name": "quarter", "counters": {"memory": {"value": "20Gi"}}},
                ]
            },
        )
    )
    assert device["consumesCounters"] == [
        {"counterSet": "gpu-0", "counters": {"memory": {"value": "20Gi"}, "sm": {"value": "1"}}},
        {"counterSet": "gpu-1", "counters": {"memory": {"value": "40Gi"}, "sm": {"value": "4"}}},
    ]


def test_mixin_kinds_do_not_mix() -> None:
    """A device include resolves among device mixins only, a consumption include among
    consumption mixins only, even where another kind has a mixin of that name."""
    spec = slice_spec(
        sharedCounters=[{"name": "s", "includes": ["x"]}],
        devices=[
            {
                "name": "d",
                "includes": ["x"],
                "consumesCounters": [{"counterSet": "s", "includes": ["x"]}],
            }
        ],
        mixins={
            "device": [{"name": "x", "attributes": {"kind": attr("device")}}],
            "counterSet": [{"name": "x", "counters": {"set": {"value": "1"}}}],
            "deviceCounterConsumption": [{"name": "x", "counters": {"used": {"value": "1"}}}],
        },
    )
    flat = flatten_slice(spec)
    assert flat["sharedCounters"][0]["counters"] == {"set": {"value": "1"}}
    assert flat["devices"][0]["attributes"] == {"kind": attr("device")}
    assert flat["devices"][0]["consumesCounters"][0]["counters"] == {"used": {"value": "1"}}


def test_the_result_has_no_mixins_and_no_includes() -> None:
    spec = slice_spec(
        sharedCounters=[{"name": "s", "includes": ["c"]}],
        devices=[
            {
                "name": "d",
                "includes": ["m"],
                "consumesCounters": [{"counterSet": "s", "includes": ["u"]}],
            }
        ],
        mixins={
            "device": [{"name": "m", "attributes": {"a": attr("x")}}],
            "counterSet": [{"name": "c", "counters": {"n": {"value": "1"}}}],
            "deviceCounterConsumption": [{"name": "u", "counters": {"n": {"value": "1"}}}],
        },
    )
    text = json.dumps(flatten_slice(spec))
    assert '"mixins"' not in text
    assert '"includes"' not in text


def test_a_dangling_include_contributes_nothing() -> None:
    """Flattening is total: what validation would reject still flattens."""
    device = one_device(
        slice_spec(
            devices=[{"name": "d", "includes": ["gone", "m"]}],
            mixins={"device": [{"name": "m", "attributes": {"a": attr("x")}}]},
        )
    )
    assert device == {"name": "d", "attributes": {"a": attr("x")}}


def test_the_first_of_duplicate_mixin_names_is_used() -> None:
    device = one_device(
        slice_spec(
            devices=[{"name": "d", "includes": ["m"]}],
            mixins={
                "device": [
                    {"name": "m", "attributes": {"a": attr("first")}},
                    {"name": "m", "attributes": {"a": attr("second")}},
                ]
            },
        )
    )
    assert device["attributes"] == {"a": attr("first")}


def test_other_fields_pass_through_unchanged() -> None:
    """Fields flattening does not own, known or not, are kept as they are."""
    taints = [{"key": "example.com/t", "effect": "NoSchedule"}]
    spec = slice_spec(
        futureField={"x": 1},
        devices=[{"name": "d", "taints": taints, "bindsToNode": True, "futureDeviceField": [1, 2]}],
    )
    flat = flatten_slice(spec)
    assert flat["futureField"] == {"x": 1}
    assert flat["devices"] == [
        {"name": "d", "taints": taints, "bindsToNode": True, "futureDeviceField": [1, 2]}
    ]


def test_maps_appear_when_written_or_filled() -> None:
    """An empty map the device wrote stays; a map neither written nor filled stays absent."""
    spec = slice_spec(
        devices=[
            {"name": "a", "attributes": {}},
            {"name": "b"},
            {"name": "c", "includes": ["m"]},
        ],
        mixins={"device": [{"name": "m", "capacity": {"n": {"value": "1"}}}]},
    )
    assert flatten_slice(spec)["devices"] == [
        {"name": "a", "attributes": {}},
        {"name": "b"},
        {"name": "c", "capacity": {"n": {"value": "1"}}},
    ]


def test_a_slice_without_mixins_flattens_to_itself() -> None:
    spec = slice_spec(
        devices=[
            {
                "name": "d",
                "attributes": {"a": attr("x")},
                "consumesCounters": [{"counterSet": "s", "counters": {"n": {"value": "1"}}}],
            }
        ],
        sharedCounters=[{"name": "s", "counters": {"n": {"value": "2"}}}],
    )
    assert flatten_slice(spec) == spec


def test_the_input_is_not_modified() -> None:
    spec = slice_spec(
        sharedCounters=[{"name": "s", "includes": ["c"], "counters": {"own": {"value": "1"}}}],
        devices=[{"name": "d", "includes": ["m"], "attributes": {"own": attr("x")}}],
        mixins={
            "device": [{"name": "m", "attributes": {"a": attr("x")}}],
            "counterSet": [{"name": "c", "counters": {"n": {"value": "1"}}}],
        },
    )
    before = copy.deepcopy(spec)
    flat = flatten_slice(spec)
    flat["devices"][0]["attributes"]["new"] = attr("y")
    flat["sharedCounters"][0]["counters"]["new"] = {"value": "1"}
    assert spec == before


def test_merged_and_sources_agree() -> None:
    mixins = {"a": {"x": 1, "y": 1}, "b": {"y": 2, "z": 2}}
    own = {"z": 0}
    assert merged(own, ["a", "b", "missing"], mixins) == {"x": 1, "y": 2, "z": 0}
    assert sources(own, ["a", "b", "missing"], mixins) == {"x": 0, "y": 1, "z": None}
    assert merged(None, None, mixins) == {}
    assert sources(None, None, mixins) == {}


# -- the property: written with mixins == written out in full -----------------------------

ATTRIBUTE_NAMES = ["model", "family", "numa", "example.com/rev", "pcie", "uuid"]
CAPACITY_NAMES = ["memory", "cores", "example.com/bw"]
COUNTER_NAMES = ["memory", "sm", "dma", "copy"]

attribute_values = st.one_of(
    st.integers(-5, 5).map(lambda i: {"int": i}),
    st.booleans().map(lambda b: {"bool": b}),
    st.sampled_from(["a", "b", ""]).map(lambda s: {"string": s}),
    st.sampled_from(["1.0.0", "2.1.3-rc.1"]).map(lambda s: {"version": s}),
)
quantities = st.sampled_from(["1", "2", "4Gi", "80Gi", "500m"]).map(lambda q: {"value": q})


@st.composite
def intended_slices(draw: st.DrawFn) -> dict[str, Any]:
    """A valid slice written out in full: counter sets and devices that consume from them."""
    sets = {
        f"set-{i}": draw(st.dictionaries(st.sampled_from(COUNTER_NAMES), quantities, min_size=1))
        for i in range(draw(st.integers(0, 3)))
    }
    devices = []
    for i in range(draw(st.integers(1, 6))):
        device: dict[str, Any] = {"name": f"dev-{i}"}
        attributes = draw(st.dictionaries(st.sampled_from(ATTRIBUTE_NAMES), attribute_values))
        capacity = draw(st.dictionaries(st.sampled_from(CAPACITY_NAMES), quantities))
        if attributes:
            device["attributes"] = attributes
        if capacity:
            device["capacity"] = capacity
        consumed = draw(st.lists(st.sampled_from(sorted(sets)), unique=True)) if sets else []
        if consumed:
            device["consumesCounters"] = [
                {
                    "counterSet": name,
                    "counters": draw(
                        st.dictionaries(st.sampled_from(sorted(sets[name])), quantities, min_size=1)
                    ),
                }
                for name in consumed
            ]
        devices.append(device)
    spec = slice_spec(devices=devices)
    if sets:
        spec["sharedCounters"] = [{"name": n, "counters": c} for n, c in sets.items()]
    return spec


DECOYS: dict[str, Any] = {
    "attributes": {"string": "decoy"},
    "capacity": {"value": "999"},
    "counters": {"value": "999"},
}
"""Values no intended slice has, so a decoy that wins shows up in the comparison."""


class _Factoring:
    """Moves entries of maps into mixins at random; identical mixins are shared by name."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.mixins: dict[str, dict[str, dict[str, Any]]] = {
            "device": {},
            "counterSet": {},
            "deviceCounterConsumption": {},
        }

    def _name(self, kind: str, content: dict[str, Any]) -> str:
        digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:10]
        name = f"m-{digest}"
        self.mixins[kind].setdefault(name, {"name": name, **content})
        return name

    def factor(
        self, kind: str, maps: dict[str, dict[str, Any]]
    ) -> tuple[list[str], dict[str, dict[str, Any]]]:
        """Split ``maps`` (e.g. attributes and capacity) between the object and up to three
        mixins; add decoy values that a later mixin or the object itself overrides.

        Returns the includes and what the object keeps itself.
        """
        draw = self.data.draw
        count = draw(st.integers(0, 3))
        parts: list[dict[str, dict[str, Any]]] = [{} for _ in range(count)]
        own: dict[str, dict[str, Any]] = {}
        for field, entries in maps.items():
            for key, value in entries.items():
                home = draw(st.integers(-1, count - 1))  # -1: the object itself
                target = own if home < 0 else parts[home]
                target.setdefault(field, {})[key] = value
                # a decoy before the winner: an earlier mixin (or any mixin, if the object wins)
                earlier = count if home < 0 else home
                if earlier and draw(st.booleans()):
                    at = draw(st.integers(0, earlier - 1))
                    parts[at].setdefault(field, {})[key] = DECOYS[field]
        includes = [self._name(kind, part) for part in parts if part]
        return includes, own


@given(intended=intended_slices(), data=st.data())
@settings(max_examples=300, deadline=None)
def test_a_slice_with_mixins_flattens_like_the_slice_written_in_full(
    intended: dict[str, Any], data: st.DataObject
) -> None:
    factoring = _Factoring(data)
    written = copy.deepcopy(intended)
    for counter_set in written.get("sharedCounters", []):
        includes, own = factoring.factor("counterSet", {"counters": counter_set.pop("counters")})
        counter_set.update(own)
        if includes:
            counter_set["includes"] = includes
    for device in written["devices"]:
        maps = {f: device.pop(f) for f in ("attributes", "capacity") if f in device}
        includes, own = factoring.factor("device", maps)
        device.update(own)
        if includes:
            device["includes"] = includes
        for consumption in device.get("consumesCounters", []):
            includes, own = factoring.factor(
                "deviceCounterConsumption", {"counters": consumption.pop("counters")}
            )
            consumption.update(own)
            if includes:
                consumption["includes"] = includes
    mixins = {kind: list(found.values()) for kind, found in factoring.mixins.items() if found}
    if mixins:
        written["mixins"] = mixins

    assert flatten_slice(written) == flatten_slice(intended) == intended
    for spec in (intended, written):
        slice_ = ResourceSlice.model_validate({"metadata": {"name": "s"}, "spec": spec})
        assert validate_resource_slice(slice_) == []

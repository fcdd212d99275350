"""DeviceTaintRules in the device view, over in-memory sources: a rule's taint reaches the
devices its selector picks (driver, pool, device; empty = all; none = no device), beside
the taints of patches, follows changes of the rule and goes away with it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from apiserver.devices import DeviceView, PatchesAndRules, device_object_name, rule_as_patch
from apiserver.sources import MemorySource, RevisionClock
from tests.unit.builders import DRIVER, device, patch_obj, slice_obj

TAINT = {"key": "example.com/broken", "value": "yes", "effect": "NoSchedule"}
EVICT = {"key": "example.com/gone", "effect": "NoExecute"}


def rule_obj(name: str, taint: dict[str, Any], selector: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"taint": dict(taint, timeAdded="2026-01-01T00:00:00Z")}
    if selector is not None:
        spec["deviceSelector"] = selector
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name, "uid": f"uid-{name}", "generation": 1},
        "spec": spec,
    }


@dataclass
class Rig:
    view: DeviceView
    sources: tuple[MemorySource, ...]
    patches: MemorySource
    rules: MemorySource

    def taints(self, slice_name: str, dev: str) -> list[tuple[str, str]]:
        state = self.view.device(device_object_name(slice_name, dev))
        assert state is not None
        return [(t["key"], t["effect"]) for t in state.device.get("taints") or ()]


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    clock = RevisionClock()
    slices = MemorySource(
        "resourceslices",
        [
            slice_obj("node-1", [device("gpu-0"), device("gpu-1")]),
            slice_obj("node-2", [device("gpu-0"), device("gpu-1")]),
            slice_obj("nic-1", [device("nic-0")], driver="nic.example.com"),
        ],
        clock=clock,
    )
    classes = MemorySource("deviceclasses", clock=clock)
    patches = MemorySource("resourceslicepatches", clock=clock)
    rules = MemorySource("devicetaintrules", clock=clock)
    view = DeviceView(slices, classes, PatchesAndRules(patches, rules))
    for source in (slices, classes, patches, rules):
        await source.start()
    await view.start()
    await view.wait_idle()
    yield Rig(view, (slices, classes, patches, rules), patches, rules)
    await view.close()
    for source in (slices, classes, patches, rules):
        await source.close()


ALL = [
    ("node-1", "gpu-0"),
    ("node-1", "gpu-1"),
    ("node-2", "gpu-0"),
    ("node-2", "gpu-1"),
    ("nic-1", "nic-0"),
]


def tainted(rig: Rig, taint: dict[str, Any]) -> list[tuple[str, str]]:
    return [d for d in ALL if (taint["key"], taint["effect"]) in rig.taints(*d)]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({"driver": DRIVER, "pool": "node-2", "device": "gpu-1"}, [("node-2", "gpu-1")]),
        ({"pool": "node-1"}, [("node-1", "gpu-0"), ("node-1", "gpu-1")]),
        ({"device": "gpu-0"}, [("node-1", "gpu-0"), ("node-2", "gpu-0")]),
        ({"driver": "nic.example.com"}, [("nic-1", "nic-0")]),
        ({"driver": DRIVER, "device": "nic-0"}, []),
        ({}, ALL),
        (None, []),
    ],
    ids=["one-device", "pool", "device-name", "driver", "no-match", "empty", "missing"],
)
async def test_a_rule_taints_the_devices_its_selector_picks(
    rig: Rig, selector: dict[str, str] | None, expected: list[tuple[str, str]]
) -> None:
    rig.rules.put(rule_obj("r", TAINT, selector))
    await rig.view.wait_idle()
    assert tainted(rig, TAINT) == expected


async def test_a_rule_follows_changes_and_goes_with_its_deletion(rig: Rig) -> None:
    rig.rules.put(rule_obj("r", TAINT, {"pool": "node-1", "device": "gpu-0"}))
    await rig.view.wait_idle()
    assert tainted(rig, TAINT) == [("node-1", "gpu-0")]
    rig.rules.put(rule_obj("r", EVICT, {"pool": "node-2"}))
    await rig.view.wait_idle()
    assert tainted(rig, TAINT) == []
    assert tainted(rig, EVICT) == [("node-2", "gpu-0"), ("node-2", "gpu-1")]
    rig.rules.remove("r")
    await rig.view.wait_idle()
    assert tainted(rig, EVICT) == []


async def test_rule_and_patch_taints_stand_side_by_side(rig: Rig) -> None:
    rig.patches.put(patch_obj("p", pool="node-1", device="gpu-1", taints=[dict(EVICT)]))
    rig.rules.put(rule_obj("p", TAINT, {"pool": "node-1", "device": "gpu-1"}))
    await rig.view.wait_idle()
    assert sorted(rig.taints("node-1", "gpu-1")) == sorted(
        [(TAINT["key"], TAINT["effect"]), (EVICT["key"], EVICT["effect"])]
    )
    state = rig.view.device(device_object_name("node-1", "gpu-1"))
    assert state is not None
    assert sorted(m.name for m in state.patched_by) == ["DeviceTaintRule/p", "p"]
    # A rule and a patch of one name are different objects: removing the patch keeps the rule.
    rig.patches.remove("p")
    await rig.view.wait_idle()
    assert rig.taints("node-1", "gpu-1") == [(TAINT["key"], TAINT["effect"])]


def test_rule_as_patch_keeps_identity_and_selects_nothing_without_a_selector() -> None:
    as_patch = rule_as_patch(rule_obj("x", TAINT, None))
    assert as_patch["metadata"]["name"] == "DeviceTaintRule/x"
    assert as_patch["metadata"]["uid"] == "uid-x"
    assert as_patch["spec"]["devices"] == {}
    with_selector = rule_as_patch(rule_obj("x", TAINT, {"driver": DRIVER}))
    assert with_selector["spec"]["devices"]["filter"] == {"driver": DRIVER}
    assert with_selector["spec"]["devices"]["taints"][0]["key"] == TAINT["key"]

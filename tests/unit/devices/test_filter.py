"""Which devices a patch's filter selects: names, DeviceClass, CEL selectors, and faulty
selectors (the patch skips the device, the failure is reported)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from apiserver.devices import Candidate, SelectorFailure, compile_patch, patch_outcome
from tests.unit.builders import DRIVER, Setup, class_obj, device, patch_obj, slice_obj, start_view

MARK = {f"{DRIVER}/marked": {"bool": True}}
A100 = f'device.attributes["{DRIVER}"].model == "a100"'

Start = Callable[..., Awaitable[Setup]]

SLICES = [
    slice_obj("node-1", [device("gpu-0", model="a100"), device("gpu-1", model="h100")]),
    slice_obj("node-2", [device("gpu-0", model="a100"), device("gpu-1")]),  # gpu-1: no model
    slice_obj("nic-1", [device("eth-0", speed=100)], driver="nic.example.com", pool="node-1"),
]


@pytest.fixture
async def view() -> AsyncIterator[Start]:
    started: list[Setup] = []

    async def start(*patches: dict[str, Any], classes: tuple[dict[str, Any], ...] = ()) -> Setup:
        setup = await start_view(SLICES, classes, patches)
        started.append(setup)
        return setup

    yield start
    for setup in started:
        await setup.close()


def marked(setup: Setup) -> set[str]:
    """Devices that carry the MARK attribute (unqualified on the driver's own devices)."""
    names = set()
    for state in setup.view.devices():
        attributes = state.device.get("attributes") or {}
        if "marked" in attributes or f"{DRIVER}/marked" in attributes:
            names.add(state.name)
    return names


async def test_no_filter_selects_every_device_of_every_driver(view: Start) -> None:
    setup = await view(patch_obj("p", attributes=MARK))
    assert marked(setup) == {s.name for s in setup.view.devices()}
    report = setup.view.patch_report("p")
    assert report is not None
    assert report.matched == 5


async def test_a_patch_that_sets_nothing_applies_to_no_device(view: Start) -> None:
    """An empty patch is not listed on every device (nor counted as matching them); once
    it sets something it applies, and when it sets nothing again it stops."""
    setup = await view(patch_obj("empty"))
    assert all(not s.patched_by for s in setup.view.devices())
    report = setup.view.patch_report("empty")
    assert report is not None
    assert report.matched == 0
    setup.patches.put(patch_obj("empty", generation=2, attributes=MARK))
    await setup.settle()
    assert marked(setup) == {s.name for s in setup.view.devices()}
    setup.patches.put(patch_obj("empty", generation=3))
    await setup.settle()
    assert all(not s.patched_by for s in setup.view.devices())


@pytest.mark.parametrize(
    ("criteria", "expected"),
    [
        ({"driver": DRIVER}, {"node-1.gpu-0", "node-1.gpu-1", "node-2.gpu-0", "node-2.gpu-1"}),
        ({"pool": "node-1"}, {"node-1.gpu-0", "node-1.gpu-1", "nic-1.eth-0"}),
        ({"device": "gpu-0"}, {"node-1.gpu-0", "node-2.gpu-0"}),
        ({"driver": DRIVER, "pool": "node-1"}, {"node-1.gpu-0", "node-1.gpu-1"}),
        ({"driver": DRIVER, "pool": "node-2", "device": "gpu-1"}, {"node-2.gpu-1"}),
        ({"driver": "nic.example.com", "device": "gpu-0"}, set()),
    ],
)
async def test_names_in_the_filter_must_all_match(
    view: Start, criteria: dict[str, str], expected: set[str]
) -> None:
    setup = await view(patch_obj("p", attributes=MARK, **criteria))
    assert marked(setup) == expected


async def test_cel_selectors_must_all_be_true(view: Start) -> None:
    setup = await view(
        patch_obj("one", driver=DRIVER, pool="node-1", selectors=[A100], attributes=MARK),
    )
    assert marked(setup) == {"node-1.gpu-0"}
    both = await view(
        patch_obj(
            "two",
            pool="node-1",
            selectors=[A100, f'device.driver == "{DRIVER}"', "false"],
            attributes=MARK,
        )
    )
    assert marked(both) == set()


async def test_the_device_class_selectors_must_match(view: Start) -> None:
    setup = await view(
        patch_obj("p", class_name="a100s", attributes=MARK),
        classes=(class_obj("a100s", f'device.driver == "{DRIVER}"', f"{A100}"),),
    )
    assert marked(setup) == {"node-1.gpu-0", "node-2.gpu-0"}


async def test_a_missing_class_matches_nothing_and_is_reported(view: Start) -> None:
    setup = await view(patch_obj("p", class_name="nowhere", attributes=MARK))
    assert marked(setup) == set()
    report = setup.view.patch_report("p")
    assert report is not None
    assert report.matched == 0
    assert report.problem_reason == "DeviceClassNotFound"


async def test_a_faulty_selector_skips_the_device_and_is_reported(view: Start) -> None:
    """node-2/gpu-1 has no model: the selector fails there (the KEP's faulty CEL), the patch
    skips that device and applies wherever the selector is true."""
    setup = await view(patch_obj("p", driver=DRIVER, selectors=[A100], attributes=MARK))
    assert marked(setup) == {"node-1.gpu-0", "node-2.gpu-0"}
    skipped = setup.view.device("node-2.gpu-1")
    assert skipped is not None
    assert skipped.patched_by == ()
    [fault] = skipped.selector_errors
    assert fault.patch == "p"
    assert fault.selector == "spec.devices.filter.selectors[0].cel.expression"
    assert "no such key: model" in fault.message
    report = setup.view.patch_report("p")
    assert report is not None
    assert report.matched == 2
    [summary] = report.faults
    assert (summary.devices, summary.example) == (1, f"{DRIVER}/node-2/gpu-1")


async def test_a_failing_class_selector_is_a_fault_of_the_patch(view: Start) -> None:
    setup = await view(
        patch_obj("p", class_name="models", attributes=MARK),
        classes=(class_obj("models", f'device.attributes["{DRIVER}"].model.startsWith("a")'),),
    )
    assert "node-1.gpu-0" in marked(setup)
    report = setup.view.patch_report("p")
    assert report is not None
    selectors = {f.selector for f in report.faults}
    assert selectors == {"deviceclass models: spec.selectors[0].cel.expression"}
    assert sum(f.devices for f in report.faults) == 2  # node-2/gpu-1 and the NIC


async def test_a_selector_that_does_not_compile_matches_nothing(view: Start) -> None:
    setup = await view(patch_obj("p", selectors=["device.attributes["], attributes=MARK))
    assert marked(setup) == set()
    report = setup.view.patch_report("p")
    assert report is not None
    assert report.problem_reason == "InvalidSelector"
    assert report.problem is not None
    assert "selectors[0]" in report.problem


def test_outcomes_of_one_device() -> None:
    """The pure rule: a patch that sets something, names first, then selectors; a failure
    is not a plain False."""
    candidate = Candidate(DRIVER, "node-1", device("gpu-0", model="a100"))
    setting = compile_patch(patch_obj("p", attributes=MARK))
    assert patch_outcome(setting, candidate, lambda _: None) is True
    assert patch_outcome(compile_patch(patch_obj("p")), candidate, lambda _: None) is False
    other_pool = compile_patch(patch_obj("p", pool="other", attributes=MARK))
    assert patch_outcome(other_pool, candidate, lambda _: None) is False
    failing = compile_patch(
        patch_obj("p", selectors=[f'device.attributes["{DRIVER}"].x > 1'], attributes=MARK)
    )
    outcome = patch_outcome(failing, candidate, lambda _: None)
    assert isinstance(outcome, SelectorFailure)
    assert outcome.selector == "spec.devices.filter.selectors[0].cel.expression"

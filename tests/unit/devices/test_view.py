"""The device view over in-memory sources: what each kind of event recomputes, what
listeners hear, revisions, and yielding to the event loop."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator, Iterable

import pytest

from apiserver.api.resource import flatten_slice
from apiserver.devices import Commit, DeviceState, DeviceView, PatchReport, device_object_name
from apiserver.sources import MemorySource, RevisionClock
from tests.unit.builders import (
    DRIVER,
    NEW,
    NULL,
    Setup,
    class_obj,
    device,
    patch_obj,
    slice_obj,
    start_view,
)

MARK = {f"{DRIVER}/marked": {"bool": True}}


class Recorder:
    """A listener that keeps what it is told."""

    def __init__(self) -> None:
        self.reset_states: list[DeviceState] = []
        self.reset_revision = -1
        self.commits: list[Commit] = []

    def reset(self, states: Iterable[DeviceState], revision: int) -> None:
        self.reset_states = list(states)
        self.reset_revision = revision

    def apply(self, commit: Commit) -> None:
        self.commits.append(commit)

    def changed(self) -> list[tuple[str | None, str | None]]:
        """(old name, new name) of every change since the last call."""
        out = [
            (c.old.name if c.old else None, c.new.name if c.new else None)
            for commit in self.commits
            for c in commit.changes
        ]
        self.commits.clear()
        return out


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    s = await start_view(
        [
            slice_obj("node-1", [device("gpu-0", model="a100"), device("gpu-1", model="h100")]),
            slice_obj("node-2", [device("gpu-0", model="a100"), device("gpu-1", model="h100")]),
        ],
        [class_obj("a100s", f'device.attributes["{DRIVER}"].model == "a100"')],
    )
    yield s
    await s.close()


@pytest.fixture
def recorder(setup: Setup) -> Recorder:
    r = Recorder()
    setup.view.subscribe(r)
    return r


def test_a_listener_added_after_the_sync_is_reset_to_the_current_state(
    setup: Setup, recorder: Recorder
) -> None:
    assert sorted(s.name for s in recorder.reset_states) == [
        "node-1.gpu-0",
        "node-1.gpu-1",
        "node-2.gpu-0",
        "node-2.gpu-1",
    ]
    assert recorder.reset_revision == setup.view.revision


async def test_idle_says_whether_a_change_is_still_to_be_committed(setup: Setup) -> None:
    assert setup.view.idle
    setup.slices.put(slice_obj("node-3", [device("gpu-0")]))
    assert not setup.view.idle  # queued, not committed
    await setup.settle()
    assert setup.view.idle
    assert setup.view.device("node-3.gpu-0") is not None


async def test_a_slice_change_recomputes_only_its_changed_devices(
    setup: Setup, recorder: Recorder
) -> None:
    setup.slices.put(
        slice_obj("node-1", [device("gpu-0", model="a100"), device("gpu-1", model="b200")])
    )
    await setup.settle()
    assert recorder.changed() == [("node-1.gpu-1", "node-1.gpu-1")]
    assert setup.device("node-1.gpu-1")["attributes"]["model"] == {"string": "b200"}


async def test_an_unchanged_device_keeps_its_matches_across_a_slice_update(
    setup: Setup, recorder: Recorder
) -> None:
    setup.patches.put(patch_obj("p", class_name="a100s", attributes=MARK))
    await setup.settle()
    recorder.changed()
    setup.slices.put(
        slice_obj("node-1", [device("gpu-0", model="a100"), device("gpu-2", model="a100")])
    )
    await setup.settle()
    assert sorted(recorder.changed(), key=str) == sorted(
        [("node-1.gpu-1", None), (None, "node-1.gpu-2")], key=str
    )
    assert setup.device("node-1.gpu-2")["attributes"]["marked"] == {"bool": True}
    assert setup.device("node-1.gpu-0")["attributes"]["marked"] == {"bool": True}


async def test_a_deleted_slice_removes_its_devices(setup: Setup, recorder: Recorder) -> None:
    setup.slices.remove("node-2")
    await setup.settle()
    assert sorted(recorder.changed()) == [("node-2.gpu-0", None), ("node-2.gpu-1", None)]
    assert {s.name for s in setup.view.devices()} == {"node-1.gpu-0", "node-1.gpu-1"}


async def test_a_new_patch_changes_only_the_devices_it_matches(
    setup: Setup, recorder: Recorder
) -> None:
    setup.patches.put(patch_obj("p", pool="node-2", device="gpu-1", attributes=MARK))
    await setup.settle()
    [commit] = recorder.commits
    assert [(c.old.name if c.old else None) for c in commit.changes] == ["node-2.gpu-1"]
    assert commit.changes[0].new is not None
    assert [m.name for m in commit.changes[0].new.patched_by] == ["p"]


async def test_deleting_the_patch_returns_to_the_drivers_data(
    setup: Setup, recorder: Recorder
) -> None:
    driver_data = {s.name: s.device for s in setup.view.devices()}
    setup.patches.put(
        patch_obj(
            "p", attributes={**MARK, f"{DRIVER}/model": NULL}, capacity={"x.io/c": {"value": "1"}}
        )
    )
    await setup.settle()
    assert all("model" not in s.device["attributes"] for s in setup.view.devices())
    setup.patches.remove("p")
    await setup.settle()
    assert {s.name: s.device for s in setup.view.devices()} == driver_data
    assert all(s.patched_by == () for s in setup.view.devices())


async def test_a_priority_change_merges_again_without_a_filter_change(
    setup: Setup, recorder: Recorder
) -> None:
    setup.patches.put(patch_obj("a", priority=1, attributes={f"{DRIVER}/x": {"string": "a"}}))
    setup.patches.put(
        patch_obj("b", priority=2, created=NEW, attributes={f"{DRIVER}/x": {"string": "b"}})
    )
    await setup.settle()
    assert setup.device("node-1.gpu-0")["attributes"]["x"] == {"string": "b"}
    setup.patches.put(patch_obj("a", priority=3, attributes={f"{DRIVER}/x": {"string": "a"}}))
    await setup.settle()
    assert {s.device["attributes"]["x"]["string"] for s in setup.view.devices()} == {"a"}


async def test_a_filter_change_reevaluates_the_patch(setup: Setup, recorder: Recorder) -> None:
    setup.patches.put(patch_obj("p", pool="node-1", attributes=MARK))
    await setup.settle()
    recorder.changed()
    setup.patches.put(patch_obj("p", pool="node-2", generation=2, attributes=MARK))
    await setup.settle()
    assert sorted(recorder.changed()) == [
        ("node-1.gpu-0", "node-1.gpu-0"),
        ("node-1.gpu-1", "node-1.gpu-1"),
        ("node-2.gpu-0", "node-2.gpu-0"),
        ("node-2.gpu-1", "node-2.gpu-1"),
    ]
    assert {s.name for s in setup.view.devices() if s.patched_by} == {
        "node-2.gpu-0",
        "node-2.gpu-1",
    }


async def test_a_class_change_reevaluates_the_patches_naming_it(
    setup: Setup, recorder: Recorder
) -> None:
    setup.patches.put(patch_obj("p", class_name="a100s", attributes=MARK))
    await setup.settle()
    assert {s.name for s in setup.view.devices() if s.patched_by} == {
        "node-1.gpu-0",
        "node-2.gpu-0",
    }
    setup.classes.put(class_obj("a100s", f'device.attributes["{DRIVER}"].model == "h100"'))
    await setup.settle()
    assert {s.name for s in setup.view.devices() if s.patched_by} == {
        "node-1.gpu-1",
        "node-2.gpu-1",
    }
    setup.classes.remove("a100s")
    await setup.settle()
    assert not any(s.patched_by for s in setup.view.devices())
    report = setup.view.patch_report("p")
    assert report is not None
    assert report.problem_reason == "DeviceClassNotFound"


async def test_commits_have_increasing_revisions(setup: Setup, recorder: Recorder) -> None:
    setup.patches.put(patch_obj("p", attributes=MARK))
    await setup.settle()
    setup.slices.put(slice_obj("node-3", [device("gpu-0")]))
    await setup.settle()
    setup.classes.put(class_obj("other", "true"))  # changes no device: no commit
    setup.patches.remove("p")
    await setup.settle()
    revisions = [c.revision for c in recorder.commits]
    assert len(revisions) == 3
    assert revisions == sorted(set(revisions))
    assert revisions[0] > recorder.reset_revision
    assert setup.view.revision == revisions[-1]


async def test_listeners_hear_only_from_the_view_after_it_is_current(
    setup: Setup, recorder: Recorder
) -> None:
    """A slice and the patch that applies to it, changed together: the first commit that
    shows the new device already has the patch applied (no unpatched intermediate state)."""
    setup.patches.put(patch_obj("p", pool="node-9", attributes=MARK))
    setup.slices.put(slice_obj("node-9", [device("gpu-0")]))
    await setup.settle()
    shown = [c.new for commit in recorder.commits for c in commit.changes if c.new is not None]
    assert [s.name for s in shown] == ["node-9.gpu-0"]
    assert shown[0].device["attributes"]["marked"] == {"bool": True}


async def test_patch_reports_follow_matches(setup: Setup) -> None:
    reports: list[PatchReport] = []
    setup.view.subscribe_patches(reports.extend)
    setup.patches.put(patch_obj("p", pool="node-1", attributes=MARK))
    await setup.settle()
    assert reports[-1].matched == 2
    setup.slices.put(slice_obj("node-1", [device("gpu-0", model="a100")]))
    await setup.settle()
    assert reports[-1].matched == 1
    assert reports[-1].generation == 1


async def test_the_build_yields_to_the_event_loop() -> None:
    """With a zero budget the view gives way after every unit of work: another task runs
    while the build is in progress, and the longest stretch is recorded."""
    ticks = 0
    building = True

    async def other_task() -> None:
        nonlocal ticks
        while building:
            ticks += 1
            await asyncio.sleep(0)  # one tick a turn of the event loop: the count is measured

    ticker = asyncio.create_task(other_task())
    slices = [slice_obj(f"node-{i}", [device(f"gpu-{j}") for j in range(4)]) for i in range(20)]
    setup = await start_view(slices, patches=[patch_obj("p", attributes=MARK)], budget=0.0)
    building = False
    await ticker
    assert ticks > 80  # at least once per device of the build
    assert setup.view.pacer.longest > 0
    assert len(setup.view.devices()) == 80
    await setup.close()


def test_device_object_names() -> None:
    assert device_object_name("node-1-gpu", "gpu-0") == "node-1-gpu.gpu-0"
    long_slice = "s" * 250
    name = device_object_name(long_slice, "gpu-0")
    assert len(name) <= 253
    assert name.startswith("gpu-0.")
    assert name == device_object_name(long_slice, "gpu-0")
    assert name != device_object_name(long_slice + "x", "gpu-0")


async def test_duplicate_device_names_in_a_slice_count_once(setup: Setup) -> None:
    setup.slices.put(slice_obj("dup", [device("gpu-0", model="a"), device("gpu-0", model="b")]))
    await setup.settle()
    assert setup.device("dup.gpu-0")["attributes"]["model"] == {"string": "a"}


async def test_the_view_holds_the_flattened_slice(setup: Setup) -> None:
    obj = slice_obj(
        "mixed",
        [{"name": "gpu-0", "includes": ["m"]}],
        mixins={"device": [{"name": "m", "attributes": {"model": {"string": "z"}}}]},
    )
    setup.slices.put(obj)
    await setup.settle()
    assert setup.device("mixed.gpu-0") == flatten_slice(obj["spec"])["devices"][0]


async def test_pause_gc_builds_with_the_collector_off_and_freezes_the_result() -> None:
    frozen = gc.get_freeze_count()
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    slices = [slice_obj(f"node-{i}", [device(f"gpu-{j}") for j in range(8)]) for i in range(50)]
    clock = RevisionClock()
    sources = (
        MemorySource("resourceslices", slices, clock=clock),
        MemorySource("deviceclasses", clock=clock),
        MemorySource("resourceslicepatches", clock=clock),
    )
    view = DeviceView(*sources, pause_gc=True)
    for source in sources:
        await source.start()
    gc.callbacks.append(count)
    try:
        await view.build()
        assert collections == []  # nothing collected while building
        assert gc.isenabled()
        assert gc.get_freeze_count() > frozen
        assert len(view.devices()) == 400
    finally:
        gc.callbacks.remove(count)
        gc.unfreeze()


async def test_a_failing_build_is_logged_and_close_does_not_raise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failed = asyncio.Event()

    class Failures(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError):
                failed.set()

    clock = RevisionClock()
    sources = (
        MemorySource("resourceslices", [slice_obj("node-1", [device("gpu-0")])], clock=clock),
        MemorySource("deviceclasses", clock=clock),
        MemorySource("resourceslicepatches", clock=clock),
    )
    view = DeviceView(*sources)

    async def broken_build() -> None:
        raise RuntimeError("build failed")

    monkeypatch.setattr(view, "build", broken_build)
    handler = Failures()
    logging.getLogger("apiserver.devices").addHandler(handler)
    try:
        for source in sources:
            await source.start()
        await view.start()
        await asyncio.wait_for(failed.wait(), 30)  # a safety net, not a measure
        assert not view.has_synced
        await view.close()  # does not raise the build's exception
        for source in sources:
            await source.close()
    finally:
        logging.getLogger("apiserver.devices").removeHandler(handler)

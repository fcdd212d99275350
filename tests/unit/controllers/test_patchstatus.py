"""The patch status controller: status and condition from the view's reports, one warning
Event per faulty selector (bumped, not duplicated), writes coalesced per patch."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import pytest

from apiserver.controllers import (
    PatchStatusController,
    RegistryEventRecorder,
    desired_status,
    event_name,
)
from apiserver.devices import DeviceView, FaultSummary, PatchReport
from apiserver.kinds.deviceclass import DeviceClassStrategy
from apiserver.kinds.event import EventStrategy
from apiserver.kinds.resourceslice import ResourceSliceStrategy
from apiserver.kinds.resourceslicepatch import ResourceSlicePatchStrategy
from apiserver.machinery import (
    DeleteOptions,
    ListOptions,
    Registry,
    StatusSubresource,
    WriteOptions,
)
from apiserver.sources import StoreSource
from apiserver.storage.sqlite import SQLiteStore
from apiserver.toolkit import CoalescingQueue
from devtools.waiting import eventually, started
from tests.unit.builders import DRIVER, device, slice_obj

WAIT = 10.0
FAILING = f'device.attributes["{DRIVER}"].model == "a100"'
NOW = "2026-03-01T00:00:00Z"


def report(**fields: Any) -> PatchReport:
    return PatchReport(**{"name": "p", "uid": "u", "generation": 2, "matched": 3, **fields})


def test_a_valid_patch_reports_matches_and_a_true_condition() -> None:
    status = desired_status(report(), None, NOW)
    assert status["observedGeneration"] == 2
    assert status["matchedDevices"] == 3
    [condition] = status["conditions"]
    assert condition["type"] == "SelectorsValid"
    assert (condition["status"], condition["reason"]) == ("True", "Valid")
    assert condition["observedGeneration"] == 2
    assert condition["lastTransitionTime"] == NOW


def test_a_faulty_selector_is_a_false_condition_naming_it() -> None:
    fault = FaultSummary(
        "spec.devices.filter.selectors[0].cel.expression", "no such key", 4, "d/p/x"
    )
    status = desired_status(report(faults=(fault,)), None, NOW)
    [condition] = status["conditions"]
    assert (condition["status"], condition["reason"]) == ("False", "FaultySelector")
    assert "selectors[0]" in condition["message"]
    assert "4 device(s)" in condition["message"]
    assert "no such key" in condition["message"]


def test_a_problem_names_its_reason() -> None:
    status = desired_status(
        report(problem="DeviceClass gpu not found", problem_reason="DeviceClassNotFound"),
        None,
        NOW,
    )
    assert status["conditions"][0]["reason"] == "DeviceClassNotFound"


def test_transition_time_and_other_conditions_are_kept() -> None:
    other = {"type": "Other", "status": "True", "lastTransitionTime": NOW, "reason": "X"}
    current = desired_status(report(), None, "2026-01-01T00:00:00Z")
    current["conditions"].insert(0, other)
    again = desired_status(report(matched=5), current, NOW)
    assert again["conditions"][0] == other
    assert again["conditions"][1]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    flipped = desired_status(report(problem="x", problem_reason="InvalidSelector"), current, NOW)
    assert flipped["conditions"][1]["lastTransitionTime"] == NOW


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_the_queue_coalesces_and_spaces_out_each_key() -> None:
    clock = FakeClock()
    queue = CoalescingQueue(interval=60, clock=clock)
    for _ in range(3):
        queue.add("p")
    queue.add("q")
    assert await queue.get() == "p"
    assert await queue.get() == "q"
    assert len(queue) == 0
    queue.done("p")
    queue.add("p")
    waiting = await started(queue.get())  # it has looked at p and waits
    assert not waiting.done()  # 60 s have not passed on the clock
    clock.now += 60
    queue.add("p")  # wakes the waiter, which now finds p ready
    assert await asyncio.wait_for(waiting, WAIT) == "p"


def test_event_names_are_stable_and_valid() -> None:
    name = event_name("p", "uid/selector")
    assert name == event_name("p", "uid/selector")
    assert name != event_name("p", "uid/other")
    assert len(event_name("x" * 300, "k")) <= 253


@dataclass
class Cluster:
    slices: Registry
    patches: Registry
    events: Registry
    view: DeviceView
    controller: PatchStatusController
    clock: FakeClock

    async def patch(self, name: str) -> dict[str, Any]:
        return (await self.patches.get(None, name)).copy()

    def let_interval_pass(self) -> None:
        """A round may have run before the device view had the slice or the patch (so it
        wrote nothing, or 0 matched): let fake time pass so that the round the view's report
        asks for is not held back by the interval."""
        self.clock.now += 60
        self.controller.queue.poke()

    def matched(self, name: str) -> int | None:
        report = self.view.patch_report(name)
        return None if report is None else report.matched

    def failing_devices(self, name: str) -> int:
        report = self.view.patch_report(name)
        return 0 if report is None else sum(f.devices for f in report.faults)

    async def warnings(self) -> list[dict[str, Any]]:
        listed = await self.events.list("default", ListOptions())
        return [i.obj for i in listed.items]


@pytest.fixture
async def cluster(store: SQLiteStore) -> AsyncIterator[Cluster]:
    group = "resource.k8s.io"
    slices = Registry(ResourceSliceStrategy.upstream(), store)
    patch_strategy = ResourceSlicePatchStrategy.for_group(group)
    patches = Registry(patch_strategy, store)
    events = Registry(EventStrategy.core(), store)
    sources = [
        StoreSource(
            store,
            ResourceSliceStrategy.upstream().resource.key_prefix(),
            name="resourceslices",
        ),
        StoreSource(store, DeviceClassStrategy.upstream().resource.key_prefix(), name="classes"),
        StoreSource(store, patch_strategy.resource.key_prefix(), name="patches"),
    ]
    view = DeviceView(*sources)
    clock = FakeClock()
    controller = PatchStatusController(
        view,
        sources[2],
        patches,
        RegistryEventRecorder(events, "test"),
        interval=60,
        clock=clock,
    )
    for source in sources:
        await source.start()
    await view.start()
    await controller.start()
    yield Cluster(slices, patches, events, view, controller, clock)
    await controller.close()
    await view.close()
    for source in sources:
        await source.close()


async def create(registry: Registry, obj: dict[str, Any]) -> None:
    await registry.create(None, obj, WriteOptions())


def rsp(name: str, **flt: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourceSlicePatch",
        "metadata": {"name": name},
        "spec": {"devices": {"filter": flt, "attributes": {f"{DRIVER}/marked": {"bool": True}}}},
    }


async def test_status_and_one_event_per_faulty_selector(cluster: Cluster) -> None:
    await create(
        cluster.slices,
        slice_obj("node-1", [device("gpu-0", model="a100"), device("gpu-1")]),
    )
    await create(cluster.patches, rsp("faulty", selectors=[{"cel": {"expression": FAILING}}]))

    async def status_and_event_written() -> bool:
        # One sync writes the status, then the Event: wait for both.
        cluster.let_interval_pass()
        patch = await cluster.patch("faulty")
        return patch.get("status", {}).get("matchedDevices") == 1 and bool(await cluster.warnings())

    await eventually(status_and_event_written)
    status = (await cluster.patch("faulty"))["status"]
    assert status["matchedDevices"] == 1
    assert status["observedGeneration"] == 1
    [condition] = status["conditions"]
    assert (condition["status"], condition["reason"]) == ("False", "FaultySelector")
    [event] = await cluster.warnings()
    assert event["reason"] == "FaultySelector"
    assert event["type"] == "Warning"
    assert event["count"] == 1
    assert event["involvedObject"]["kind"] == "ResourceSlicePatch"
    assert event["involvedObject"]["name"] == "faulty"
    assert "1 device(s)" in event["message"]

    # The same failure on more devices: the same Event, bumped (once the interval passed).
    await create(cluster.slices, slice_obj("node-2", [device("gpu-0")]))
    await eventually(lambda: cluster.failing_devices("faulty") == 2, "the view to see node-2")
    cluster.clock.now += 60
    cluster.controller.queue.add("faulty")

    async def bumped() -> bool:
        return [e["count"] for e in await cluster.warnings()] == [2]

    await eventually(bumped)
    [event] = await cluster.warnings()
    assert "2 device(s)" in event["message"]


async def test_writes_wait_for_the_interval_and_carry_the_latest_state(cluster: Cluster) -> None:
    await create(cluster.slices, slice_obj("node-1", [device("gpu-0"), device("gpu-1")]))
    await create(cluster.patches, rsp("p", pool="node-1"))

    def matched(count: int) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            return (await cluster.patch("p")).get("status", {}).get("matchedDevices") == count

        return check

    async def first_written() -> bool:
        cluster.let_interval_pass()
        return await matched(2)()

    await eventually(first_written)
    written = (await cluster.patch("p"))["metadata"]["resourceVersion"]
    for i in range(3):  # a burst of changes within the interval
        await create(cluster.slices, slice_obj(f"extra-{i}", [device("gpu-9")], pool="node-1"))
    await eventually(lambda: cluster.matched("p") == 5, "the view to see the burst")
    # The burst reached the controller: p waits in its queue for the interval to pass.
    await eventually(lambda: len(cluster.controller.queue) == 1, "p to wait in the queue")
    assert (await cluster.patch("p"))["metadata"]["resourceVersion"] == written
    cluster.clock.now += 60
    cluster.controller.queue.add("p")
    await eventually(matched(5))
    assert [e for e in await cluster.warnings() if e["involvedObject"]["name"] == "p"] == []


async def test_a_status_someone_else_wrote_is_restored(cluster: Cluster) -> None:
    await create(cluster.slices, slice_obj("node-1", [device("gpu-0")]))
    await create(cluster.patches, rsp("p"))

    async def matched_one() -> bool:
        return (await cluster.patch("p")).get("status", {}).get("matchedDevices") == 1

    async def first_written() -> bool:
        cluster.let_interval_pass()
        return await matched_one()

    await eventually(first_written)
    cluster.clock.now += 60  # the next round may write at once
    await StatusSubresource(cluster.patches).patch(
        None,
        "p",
        b'{"status": {"matchedDevices": 99}}',
        "application/merge-patch+json",
        WriteOptions(),
    )

    async def restored() -> bool:
        # The controller's own write may have started a new interval after the clock moved:
        # let fake time pass until the foreign write's event is worked.
        cluster.let_interval_pass()
        return await matched_one()

    await eventually(restored)


async def test_recorded_failures_are_forgotten_once_the_patch_is_deleted(cluster: Cluster) -> None:
    await create(cluster.slices, slice_obj("node-1", [device("gpu-0", model="a100")]))
    await create(cluster.patches, rsp("faulty", selectors=[{"cel": {"expression": FAILING}}]))

    async def recorded() -> bool:
        return bool(cluster.controller._faults)

    await eventually(recorded)  # the round that recorded the failure has ended
    await cluster.patches.delete(None, "faulty", DeleteOptions())
    cluster.clock.now += 60  # the next round may run at once
    cluster.controller.queue.add("faulty")

    async def forgotten() -> bool:
        return not cluster.controller._faults

    await eventually(forgotten)


async def test_a_queue_wait_cancelled_as_a_key_arrives_ends_cancelled() -> None:
    """A close that races an add must stop the worker: the waiting ``get`` ends cancelled, not
    with the key (which would leave a worker loop running after its controller closed)."""
    queue = CoalescingQueue(interval=60)
    queue.done("q")
    queue.add("q")  # worked just now: the waiter waits with a timeout for its interval
    waiting = await started(queue.get())
    queue.add("p")  # the event is set: the waiter is about to wake with a key...
    waiting.cancel()  # ...and is cancelled in the same turn of the loop
    with pytest.raises(asyncio.CancelledError):
        await waiting


class LateView:
    """A device view that has not seen any patch until the test hands it a report."""

    def __init__(self) -> None:
        self.reports: dict[str, PatchReport] = {}
        self.listeners: list[Callable[[list[PatchReport]], None]] = []

    def subscribe_patches(self, listener: Callable[[list[PatchReport]], None]) -> None:
        self.listeners.append(listener)

    async def wait_synced(self) -> None:
        return None

    def patch_report(self, name: str) -> PatchReport | None:
        return self.reports.get(name)

    def publish(self, report: PatchReport) -> None:
        self.reports[report.name] = report
        for listener in self.listeners:
            listener([report])


async def test_a_report_after_a_round_that_found_none_is_written_at_once(
    store: SQLiteStore,
) -> None:
    """The patch's own event may reach the controller before the view has evaluated the
    patch: that round writes nothing, so the report that follows must not wait out the
    interval (the fake clock never moves here)."""
    strategy = ResourceSlicePatchStrategy.for_group("resource.k8s.io")
    patches = Registry(strategy, store)
    source = StoreSource(store, strategy.resource.key_prefix(), name="patches")
    view = LateView()
    controller = PatchStatusController(
        cast(DeviceView, view), source, patches, None, interval=60, clock=FakeClock()
    )
    rounds: list[str] = []
    sync = controller.sync

    async def counted(name: str) -> None:
        await sync(name)
        rounds.append(name)

    controller.sync = counted  # type: ignore[method-assign]
    await source.start()
    await controller.start()
    try:
        await create(patches, rsp("p"))
        await eventually(lambda: rounds == ["p"], "a round without a report")
        uid = (await patches.get(None, "p")).obj["metadata"]["uid"]
        view.publish(PatchReport(name="p", uid=uid, generation=1, matched=4))

        async def written() -> bool:
            status = (await patches.get(None, "p")).obj.get("status", {})
            return bool(status.get("matchedDevices") == 4)

        await eventually(written)
    finally:
        await controller.close()
        await source.close()

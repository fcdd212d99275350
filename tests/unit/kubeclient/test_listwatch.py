"""kubeclient's list-then-watch: a watch resumes from the last resourceVersion seen (an
event's or a bookmark's), 410 Gone lists again, failures back off with growing waits, and
a handler can stop the loop — against an in-process collection (tests/unit/kubeclient/fakekube.py)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from apiserver.kubeclient import Collection, ListWatch
from apiserver.toolkit import JSON, Backoff
from devtools.waiting import eventually
from tests.unit.kubeclient.fakekube import PATH, FakeKube

log = logging.getLogger("test")


class Mirror:
    """What a consumer keeps: the objects by name, and every call it was given."""

    def __init__(self) -> None:
        self.objects: dict[str, JSON] = {}
        self.lists = 0
        self.events: list[tuple[str, str]] = []

    async def listed(self, items: list[JSON]) -> None:
        self.lists += 1
        self.objects = {o["metadata"]["name"]: o for o in items}

    async def changed(self, kind: str, obj: JSON) -> None:
        name = obj["metadata"]["name"]
        self.events.append((kind, name))
        if kind == "DELETED":
            self.objects.pop(name, None)
        else:
            self.objects[name] = obj


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(0)


def _list_watch(kube: FakeKube, mirror: Mirror, backoff: Backoff | None = None) -> ListWatch:
    return ListWatch(
        Collection(kube.client(), PATH, page_size=2, watch_timeout=5),
        name="widgets",
        on_list=mirror.listed,
        on_event=mirror.changed,
        log=log,
        backoff=backoff or Backoff(0.001, 0.01),
    )


async def _running(watch: ListWatch) -> asyncio.Task[None]:
    return asyncio.create_task(watch.run())


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_each_watch_resumes_where_the_last_one_ended() -> None:
    kube, mirror = FakeKube(), Mirror()
    kube.put("a")
    watch = _list_watch(kube, mirror)
    task = await _running(watch)
    try:
        await eventually(lambda: len(kube.watches()) >= 2)
        kube.put("b")  # after the first bookmark: the next watch brings it
        await eventually(lambda: "b" in mirror.objects)
        kube.put("c")
        kube.remove("a")
        await eventually(lambda: "a" not in mirror.objects and "c" in mirror.objects)
    finally:
        await _stop(task)
    assert mirror.lists == 1  # never listed again: every watch went on from the last one
    assert mirror.events == [("ADDED", "b"), ("ADDED", "c"), ("DELETED", "a")]
    versions = [q.get("resourceVersion") for q in kube.watches()]
    assert versions[0] == "1"  # the list's snapshot
    assert set(versions) <= {"1", "2", "4"}  # a bookmark's or an event's version, never older
    assert versions == sorted(versions, key=int)


@pytest.mark.parametrize("as_event", [False, True], ids=["answer", "error-event"])
async def test_a_watch_from_a_compacted_revision_lists_again(as_event: bool) -> None:
    kube, mirror = FakeKube(), Mirror()
    kube.put("a")
    kube.put("b")
    watch = _list_watch(kube, mirror)
    task = await _running(watch)
    try:
        await eventually(lambda: mirror.lists == 1 and len(kube.watches()) >= 1)
        kube.failures = [None]  # the watch is dropped once while history goes on
        await eventually(lambda: watch.reflector.failures == 1)
        kube.remove("a")
        kube.put("c")
        kube.compacted, kube.gone_as_event = kube.revision, as_event
        await eventually(lambda: mirror.lists == 2)
        kube.compacted = 0
    finally:
        await _stop(task)
    assert set(mirror.objects) == {"b", "c"}
    assert watch.reflector.expirations >= 1


async def test_failures_back_off_with_growing_waits_and_then_recover() -> None:
    kube, mirror, sleeps = FakeKube(), Mirror(), Sleeps()
    kube.put("a")
    kube.failures = [503, None, 500, 429]
    watch = _list_watch(kube, mirror, Backoff(1.0, 8.0, 2.0, jitter=0.0, sleep=sleeps))
    task = await _running(watch)
    try:
        await eventually(lambda: mirror.lists == 1)
    finally:
        await _stop(task)
    assert watch.reflector.failures == 4
    assert sleeps.waits[:4] == [1.0, 2.0, 4.0, 8.0]
    assert set(mirror.objects) == {"a"}


async def test_a_handler_stops_the_loop() -> None:
    kube, mirror = FakeKube(), Mirror()
    kube.put("a")
    watch: ListWatch

    async def changed(kind: str, obj: JSON) -> None:
        await mirror.changed(kind, obj)
        if obj["metadata"]["name"] == "stop":
            watch.stop()

    watch = ListWatch(
        Collection(kube.client(), PATH),
        name="widgets",
        on_list=mirror.listed,
        on_event=changed,
        log=log,
        backoff=Backoff(0.001, 0.01),
    )
    task = await _running(watch)
    await eventually(lambda: len(kube.watches()) >= 1)
    kube.put("stop")
    kube.put("after")
    await asyncio.wait_for(task, 30)  # run() returned by itself
    assert mirror.events[-1] == ("ADDED", "stop")
    assert "after" not in mirror.objects

"""The one Event recording behaviour over any writer: create once, then bump; a create
that loses a race bumps instead."""

from __future__ import annotations

from typing import Any

from apiserver.controllers.events import DedupEventRecorder, event_name

ABOUT = {
    "apiVersion": "resource.x-k8s.io/v1alpha3",
    "kind": "ResourceSlicePatch",
    "metadata": {"name": "p", "uid": "u-1", "resourceVersion": "7"},
}


class Events:
    """Events by (namespace, name), as a kube-apiserver keeps them."""

    def __init__(self) -> None:
        self.stored: dict[tuple[str, str], dict[str, Any]] = {}
        self.racer: dict[str, Any] | None = None
        """An Event another writer creates just before our next create."""

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.stored.get((namespace, name))

    async def create(self, namespace: str, event: dict[str, Any]) -> bool:
        key = (namespace, event["metadata"]["name"])
        if self.racer is not None:
            self.stored[key], self.racer = self.racer, None
        if key in self.stored:
            return False
        self.stored[key] = event
        return True

    async def merge(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self.stored[(namespace, name)] = {**self.stored[(namespace, name)], **patch}


async def test_first_warning_creates_and_a_repeat_bumps_the_same_event() -> None:
    events = Events()
    recorder = DedupEventRecorder(events, "dra-apiserver")
    await recorder.warn(ABOUT, "selector-0", "FaultySelector", "first")
    [(namespace, name)] = events.stored
    assert (namespace, name) == ("default", event_name("p", "u-1/selector-0"))
    event = events.stored[(namespace, name)]
    assert event["involvedObject"] == {
        "apiVersion": "resource.x-k8s.io/v1alpha3",
        "kind": "ResourceSlicePatch",
        "name": "p",
        "uid": "u-1",
        "resourceVersion": "7",
    }
    assert (event["type"], event["reason"], event["count"]) == ("Warning", "FaultySelector", 1)
    await recorder.warn(ABOUT, "selector-0", "FaultySelector", "again")
    assert len(events.stored) == 1
    assert events.stored[(namespace, name)]["count"] == 2
    assert events.stored[(namespace, name)]["message"] == "again"


async def test_a_create_that_loses_a_race_bumps_the_winner() -> None:
    events = Events()
    recorder = DedupEventRecorder(events, "dra-apiserver")
    events.racer = {"metadata": {"name": "x"}, "count": 4, "message": "theirs"}
    await recorder.warn(ABOUT, "k", "FaultySelector", "ours")
    [event] = events.stored.values()
    assert (event["count"], event["message"]) == (5, "ours")

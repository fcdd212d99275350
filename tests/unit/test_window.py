"""The in-memory pieces the watch cache and the Device store share: a map read in key order
and a bounded window of events that keeps or drops whole revisions."""

from __future__ import annotations

from apiserver.storage import EventType, StoredObject, WatchEvent
from apiserver.storage.window import EventWindow, SortedMap


def event(key: str, revision: int) -> WatchEvent:
    return WatchEvent(EventType.ADDED, StoredObject(key, revision, b"{}"))


def revisions(events: list[WatchEvent]) -> list[int]:
    return [e.revision for e in events]


def test_pages_are_in_key_order_under_the_prefix_from_start() -> None:
    values = SortedMap({"/g/b/2": 2, "/g/a/1": 1, "/g/b/1": 1, "/g/c/1": 1})
    assert values.page("/g/b/", "", 0) == (["/g/b/1", "/g/b/2"], False)
    assert values.page("/g/", "", 2) == (["/g/a/1", "/g/b/1"], True)
    assert values.page("/g/", "/g/b/2", 0) == (["/g/b/2", "/g/c/1"], False)
    assert values.page("/g/", "", 4) == (["/g/a/1", "/g/b/1", "/g/b/2", "/g/c/1"], False)


def test_keys_added_or_removed_show_in_the_next_page() -> None:
    values: SortedMap[int] = SortedMap()
    assert values.put("/g/b", 1) is None
    assert values.page("/g/", "", 0) == (["/g/b"], False)
    values.put("/g/a", 1)
    assert values.put("/g/b", 2) == 1
    assert values.page("/g/", "", 0) == (["/g/a", "/g/b"], False)
    assert values.pop("/g/a") == 1
    assert values.pop("/g/a") is None
    assert values.page("/g/", "", 0) == (["/g/b"], False)
    assert values["/g/b"] == 2
    assert "/g/a" not in values
    assert len(values) == 1


def test_the_window_drops_whole_revisions_down_to_its_size() -> None:
    window = EventWindow(3)
    window.reset(10)
    window.extend([event("/a", 11), event("/b", 11)])
    window.extend([event("/a", 12), event("/b", 12)])  # four events: revision 11 goes
    assert revisions(window.after(0)) == [12, 12]
    assert window.start == 11
    window.extend([event("/a", 13), event("/b", 13), event("/c", 13), event("/d", 13)])
    assert revisions(window.after(0)) == []  # a revision larger than the window goes whole
    assert window.start == 13


def test_slack_trims_in_chunks_and_after_is_the_events_past_a_revision() -> None:
    window = EventWindow(4, slack=2)
    window.reset(0)
    for revision in range(1, 7):
        window.extend([event("/a", revision)])
    assert len(window) == 6  # within size + slack: nothing dropped yet
    assert window.start == 0
    window.extend([event("/a", 7)])
    assert revisions(window.after(0)) == [4, 5, 6, 7]
    assert window.start == 3
    assert revisions(window.after(5)) == [6, 7]
    window.reset(9)
    assert len(window) == 0
    assert window.start == 9

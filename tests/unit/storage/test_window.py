"""The in-memory pieces the watch cache and the Device store share: a map read in key order
and a bounded window of events that keeps or drops whole revisions."""

from __future__ import annotations

from apiserver.storage import EventType, StoredObject, WatchEvent
from apiserver.storage.window import EventWindow, SortedMap, event_bytes


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


def sized(key: str, revision: int, size: int, prev: StoredObject | None = None) -> WatchEvent:
    body = b'{"p":"' + b"x" * (size - 8) + b'"}'
    return WatchEvent(EventType.MODIFIED, StoredObject(key, revision, body), prev)


def test_the_window_is_bounded_by_bytes_as_well_as_by_count() -> None:
    window = EventWindow(1000, max_bytes=10_000)
    for revision in range(1, 101):
        window.extend([sized(f"/g/a/{revision % 3}", revision, 1000)])
        assert window.bytes <= 10_000
    assert 1 <= len(window) <= 10
    assert revisions(window.after(window.start)) == list(range(window.start + 1, 101))
    assert window.bytes == sum(event_bytes(e) for e in window.after(0))


def test_the_byte_bound_drops_whole_revisions() -> None:
    one = event_bytes(sized("/g/a/1", 1, 1000))
    window = EventWindow(1000, max_bytes=2 * one + one // 2)
    window.extend([sized("/g/a/1", 1, 1000), sized("/g/a/2", 1, 1000)])
    window.extend([sized("/g/a/1", 2, 1000), sized("/g/a/2", 2, 1000)])
    assert window.start == 1
    assert revisions(window.after(0)) == [2, 2]
    window.extend([sized("/g/a/1", 3, 1000)])
    assert revisions(window.after(0)) == [3]  # revision 2 goes whole, not half of it
    assert window.start == 2
    window.extend([sized("/g/a/1", 4, 10 * one)])  # a revision over the bound goes whole
    assert revisions(window.after(0)) == []
    assert window.start == 4
    assert window.bytes == 0


def test_the_window_keeps_no_parsed_copies() -> None:
    """An event's parsed object can be ten times its bytes; the window keeps the bytes."""
    prev = StoredObject("/g/a/1", 1, b'{"a":1}')
    stored = StoredObject("/g/a/1", 2, b'{"a":2}')
    assert stored.obj == {"a": 2}
    assert prev.obj == {"a": 1}
    window = EventWindow(10, max_bytes=1_000_000)
    window.extend([WatchEvent(EventType.MODIFIED, stored, prev)])
    [kept] = window.after(0)
    assert kept.object.raw is stored.raw
    assert kept.prev is not None
    assert kept.prev.raw is prev.raw
    assert "obj" not in vars(kept.object)
    assert "obj" not in vars(kept.prev)
    assert kept.object.obj == {"a": 2}  # still readable, parsed again on demand

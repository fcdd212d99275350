"""Recent state kept in memory: current values in key order, and a bounded window of events.

The watch cache and the Device store both answer gets and lists from a map of the current
objects and serve watches from a window of the latest events; these are the two pieces
they share. Revisions at or below ``EventWindow.start`` are gone from the window: a watch
or a list from before it has to be served from elsewhere, or is 410 Gone.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Generic, TypeVar

from .interface import StoredObject, WatchEvent, prefix_end

V = TypeVar("V")

WATCH_WINDOW = 10_000
"""Events kept for watches per kind unless configured (``--watch-history``)."""


class SortedMap(Generic[V]):
    """Values by key; the keys are sorted when a read needs them in order, after a change
    that added or removed one."""

    def __init__(self, values: dict[str, V] | None = None) -> None:
        self._values: dict[str, V] = values if values is not None else {}
        self._sorted: list[str] | None = None

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: str) -> bool:
        return key in self._values

    def __getitem__(self, key: str) -> V:
        return self._values[key]

    def get(self, key: str) -> V | None:
        return self._values.get(key)

    def values(self) -> Iterator[V]:
        return iter(self._values.values())

    def put(self, key: str, value: V) -> V | None:
        """Set the value of ``key``; its previous value, or None if it is new."""
        old = self._values.get(key)
        if old is None:
            self._sorted = None
        self._values[key] = value
        return old

    def pop(self, key: str) -> V | None:
        old = self._values.pop(key, None)
        if old is not None:
            self._sorted = None
        return old

    def page(self, prefix: str, start: str, limit: int) -> tuple[list[str], bool]:
        """The keys under ``prefix`` from ``start`` (inclusive) in order, at most ``limit``
        of them (0: all), and whether more keys under ``prefix`` follow."""
        if self._sorted is None:
            self._sorted = sorted(self._values)
        keys = self._sorted
        low = bisect.bisect_left(keys, max(prefix, start))
        high = bisect.bisect_left(keys, prefix_end(prefix), lo=low)
        stop = min(high, low + limit) if limit > 0 else high
        return keys[low:stop], stop < high


EVENT_OVERHEAD = 400
"""Bytes an event costs beyond its JSON: the event and its two lean object records."""


def event_bytes(event: WatchEvent) -> int:
    """What ``event`` costs in a window: its object's and previous object's JSON bytes and
    the records holding them. Bytes shared with another event (a previous object that is
    also an earlier event's object) are counted twice, so a bound errs towards less memory."""
    prev = event.prev
    return len(event.object.raw) + (len(prev.raw) if prev is not None else 0) + EVENT_OVERHEAD


def _lean(stored: StoredObject) -> StoredObject:
    """The same version without the parsed form a reader may have cached on it (that form
    can be ten times the bytes); it is parsed again if a replay needs it."""
    if "obj" not in vars(stored) and stored._parsed is None:
        return stored
    return StoredObject(stored.key, stored.revision, stored.raw)


def lean_event(event: WatchEvent) -> WatchEvent:
    """``event`` with its objects lean (see ``_lean``); itself if they already are."""
    prev = event.prev
    kept_object = _lean(event.object)
    kept_prev = _lean(prev) if prev is not None else None
    if kept_object is event.object and kept_prev is prev:
        return event
    return WatchEvent(event.type, kept_object, kept_prev)


class EventWindow:
    """The latest events in revision order: at most ``size`` of them once trimmed, and
    (when ``max_bytes`` is set) at most ``max_bytes`` by ``event_bytes``.

    A revision is kept or dropped whole (several events may share one), so one larger than
    a bound goes at once, leaving the window empty and complete from it on. Trimming by count waits until the window
    holds ``slack`` events more than ``size``, so that it is done in chunks: amortised O(1)
    per event. Events are kept without parsed copies of their objects.
    """

    def __init__(self, size: int, slack: int = 0, max_bytes: int = 0) -> None:
        self.size = size
        self.slack = slack
        self.max_bytes = max_bytes
        self.start = 0
        """Every event after this revision is in the window."""
        self.bytes = 0
        """The ``event_bytes`` of the events in the window."""
        self._events: list[WatchEvent] = []
        self._bytes: list[int] = []

    def __len__(self) -> int:
        return len(self._events)

    def reset(self, revision: int) -> None:
        """Empty, complete from ``revision`` on."""
        self._events = []
        self._bytes = []
        self.bytes = 0
        self.start = revision

    def extend(self, events: list[WatchEvent]) -> None:
        """Add the events of one or more later revisions, then trim."""
        window = self._events
        for event in events:
            kept = lean_event(event)
            cost = event_bytes(kept)
            window.append(kept)
            self._bytes.append(cost)
            self.bytes += cost
        drop = len(window) - self.size if len(window) > self.size + self.slack else 0
        if self.max_bytes and self.bytes > self.max_bytes:
            excess = self.bytes - self.max_bytes
            freed = sum(self._bytes[:drop])
            while freed < excess and drop < len(window):
                freed += self._bytes[drop]
                drop += 1
        if drop <= 0:
            return
        while drop < len(window) and window[drop].revision == window[drop - 1].revision:
            drop += 1
        self.start = window[drop - 1].revision
        self.bytes -= sum(self._bytes[:drop])
        del window[:drop]
        del self._bytes[:drop]

    def after(self, revision: int) -> list[WatchEvent]:
        """The events after ``revision`` still in the window, oldest first."""
        at = bisect.bisect_right(self._events, revision, key=lambda e: e.revision)
        return self._events[at:]

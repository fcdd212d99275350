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

from .interface import WatchEvent, prefix_end

V = TypeVar("V")


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


class EventWindow:
    """The latest events in revision order, at most ``size`` of them once trimmed.

    A revision is kept or dropped whole (several events may share one). Trimming waits
    until the window holds ``slack`` events more than ``size``, so that it is done in
    chunks: amortised O(1) per event.
    """

    def __init__(self, size: int, slack: int = 0) -> None:
        self.size = size
        self.slack = slack
        self.start = 0
        """Every event after this revision is in the window."""
        self._events: list[WatchEvent] = []

    def __len__(self) -> int:
        return len(self._events)

    def reset(self, revision: int) -> None:
        """Empty, complete from ``revision`` on."""
        self._events = []
        self.start = revision

    def extend(self, events: list[WatchEvent]) -> None:
        """Add the events of one or more later revisions, then trim."""
        window = self._events
        window.extend(events)
        if len(window) <= self.size + self.slack:
            return
        drop = len(window) - self.size
        while drop < len(window) and window[drop].revision == window[drop - 1].revision:
            drop += 1
        self.start = window[drop - 1].revision
        del window[:drop]

    def after(self, revision: int) -> list[WatchEvent]:
        """The events after ``revision`` still in the window, oldest first."""
        at = bisect.bisect_right(self._events, revision, key=lambda e: e.revision)
        return self._events[at:]

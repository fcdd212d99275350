"""In-process fan-out of watch events: one publisher, many subscribers filtered by key prefix.

Events are published once, in revision order, and each subscriber gets the same
``WatchEvent`` object (so the bytes are shared). Each subscriber buffers what it has not
taken yet. As Kubernetes' cacher does with a watcher whose buffer stays full, a subscriber
whose buffer has been full (a tenth of its bounds: ``max_pending`` events or
``max_pending_bytes`` of their JSON) for ``stall_timeout`` seconds is cut off, and one
that reaches the bounds themselves at once, whatever the time; each cut-off is logged and
counted (``terminations``), its buffer freed, and its client re-watches from the last
revision it saw. Time is read only while a buffer is full: no timer, no task per
subscriber.

``FollowingWatch`` is the watch the in-memory stores build on this: a backlog of events
(history, or a window), then the events of a subscription taken before the backlog ended.
"""

from __future__ import annotations

import asyncio
import time
from abc import abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable

from .interface import Watch, WatchEvent
from .terminations import TERMINATED
from .window import WATCH_WINDOW, event_bytes

MAX_PENDING_BYTES = 64 * 1024 * 1024
"""Bytes of events (their JSON) a subscriber may hold unread before it is cut off at once."""

STALL_TIMEOUT = 10.0
"""Seconds a subscriber's buffer may stay full before it is cut off."""


class Subscription:
    def __init__(self, fanout: Fanout, prefix: str, end: str) -> None:
        self._fanout = fanout
        self.prefix = prefix
        self.end = end
        self._pending: deque[tuple[WatchEvent, int]] = deque()
        self._bytes = 0
        self._full_since: float | None = None
        """When the buffer last became full (None while it is not)."""
        self._wakeup = asyncio.Event()
        self.closed = False
        self.overflowed = False
        self.on_cut: Callable[[], None] | None = None
        """Called when the subscription is cut off for falling behind."""

    def _offer(self, event: WatchEvent, cost: int) -> None:
        if self.closed:
            return
        fanout = self._fanout
        if len(self._pending) >= fanout.max_pending or self._bytes + cost > fanout.max_bytes:
            self._cut(f"{len(self._pending)} events ({self._bytes} bytes) unread")
            return
        self._pending.append((event, cost))
        self._bytes += cost
        if len(self._pending) >= fanout.buffer or self._bytes >= fanout.buffer_bytes:
            now = time.monotonic()
            if self._full_since is None:
                self._full_since = now
            elif now - self._full_since >= fanout.stall_timeout:
                self._cut(
                    f"its buffer of {len(self._pending)} events ({self._bytes} bytes) stayed"
                    f" full for {now - self._full_since:.1f} s"
                )
                return
        self._wakeup.set()

    def _cut(self, why: str) -> None:
        """End the subscription for falling behind: free what it held, log and count it."""
        self.overflowed = True
        self.closed = True
        self._pending.clear()
        self._bytes = 0
        self._fanout._subscribers.discard(self)
        TERMINATED.record(self.prefix, why)
        self._wakeup.set()
        if self.on_cut is not None:
            self.on_cut()

    async def next(self) -> WatchEvent | None:
        """The next event, or None once the subscription is closed or overflowed."""
        while not self._pending:
            if self.closed:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()
        if self.overflowed:
            return None
        event, cost = self._pending.popleft()
        self._bytes -= cost
        if self._full_since is not None and (
            len(self._pending) < self._fanout.buffer and self._bytes < self._fanout.buffer_bytes
        ):
            self._full_since = None
        return event

    def empty(self) -> bool:
        return not self._pending

    def close(self) -> None:
        self.closed = True
        self._wakeup.set()
        self._fanout._subscribers.discard(self)


class Fanout:
    def __init__(
        self,
        revision: int = 0,
        max_pending: int = WATCH_WINDOW,
        *,
        max_pending_bytes: int = MAX_PENDING_BYTES,
        stall_timeout: float = STALL_TIMEOUT,
    ) -> None:
        self.revision = revision
        self.max_pending = max_pending
        self.max_bytes = max_pending_bytes
        self.stall_timeout = stall_timeout
        self._subscribers: set[Subscription] = set()

    @property
    def buffer(self) -> int:
        """Events that make a subscriber's buffer full."""
        return max(self.max_pending // 10, 1)

    @property
    def buffer_bytes(self) -> int:
        """Bytes that make a subscriber's buffer full."""
        return max(self.max_bytes // 10, 1)

    def subscribe(self, prefix: str, end: str) -> Subscription:
        sub = Subscription(self, prefix, end)
        self._subscribers.add(sub)
        return sub

    def publish(self, event: WatchEvent) -> None:
        key = event.object.key
        cost = event_bytes(event)
        for sub in tuple(self._subscribers):
            if sub.prefix <= key < sub.end:
                sub._offer(event, cost)
        self.revision = max(self.revision, event.revision)

    def close_all(self) -> None:
        for sub in tuple(self._subscribers):
            sub.close()

    def __len__(self) -> int:
        return len(self._subscribers)


class FollowingWatch(Watch):
    """A watch from ``revision`` that sends a backlog and then follows a subscription.

    The subscription must be taken before the backlog is read, so that no event falls
    between them; an event it carries that the backlog already sent is skipped.
    Implementations produce their events with ``_replay_then_follow`` and say with
    ``_head`` how far their source is complete, for ``progress``.
    """

    def __init__(self, revision: int) -> None:
        self._last = revision
        self._sub: Subscription | None = None
        self._caught_up = False

    async def _replay_then_follow(
        self, backlog: Iterable[WatchEvent], sub: Subscription
    ) -> AsyncIterator[WatchEvent]:
        """The backlog, then the subscription's later events; closes the subscription."""
        self._sub = sub
        sub.on_cut = self._cut
        try:
            for event in backlog:
                self._last = event.revision
                yield event
            replayed = self._last
            self._caught_up = True
            while True:
                live = await sub.next()
                if live is None:
                    return
                if live.revision <= replayed:
                    continue
                self._last = live.revision
                yield live
        finally:
            sub.close()

    def _cut(self) -> None:
        if self.on_cut is not None:
            self.on_cut()

    @abstractmethod
    def _head(self) -> int:
        """A revision the source of the events is complete up to."""

    def progress(self) -> int | None:
        sub = self._sub
        if not self._caught_up or sub is None or sub.closed or not sub.empty():
            return None
        return max(self._last, self._head())

    async def close(self) -> None:
        if self._sub is not None:
            self._sub.close()

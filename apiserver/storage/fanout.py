"""In-process fan-out of watch events: one publisher, many subscribers filtered by key prefix.

Events are published once, in revision order, and each subscriber gets the same
``WatchEvent`` object (so the bytes are shared). A subscriber that falls more than
``max_pending`` events behind is cut off, as Kubernetes' cacher does with slow
watchers (logged and counted, see ``terminations``); its client re-watches from the last
revision it saw.

``FollowingWatch`` is the watch the in-memory stores build on this: a backlog of events
(history, or a window), then the events of a subscription taken before the backlog ended.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Iterable

from .interface import Watch, WatchEvent
from .terminations import TERMINATED


class Subscription:
    def __init__(self, fanout: Fanout, prefix: str, end: str) -> None:
        self._fanout = fanout
        self.prefix = prefix
        self.end = end
        self._pending: deque[WatchEvent] = deque()
        self._wakeup = asyncio.Event()
        self.closed = False
        self.overflowed = False

    def _offer(self, event: WatchEvent) -> None:
        if self.closed:
            return
        if len(self._pending) >= self._fanout.max_pending:
            self.overflowed = True
            self.closed = True
            TERMINATED.record(self.prefix, len(self._pending))
        else:
            self._pending.append(event)
        self._wakeup.set()

    async def next(self) -> WatchEvent | None:
        """The next event, or None once the subscription is closed or overflowed."""
        while not self._pending:
            if self.closed:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()
        if self.overflowed:
            return None
        return self._pending.popleft()

    def empty(self) -> bool:
        return not self._pending

    def close(self) -> None:
        self.closed = True
        self._wakeup.set()
        self._fanout._subscribers.discard(self)


class Fanout:
    def __init__(self, revision: int = 0, max_pending: int = 10_000) -> None:
        self.revision = revision
        self.max_pending = max_pending
        self._subscribers: set[Subscription] = set()

    def subscribe(self, prefix: str, end: str) -> Subscription:
        sub = Subscription(self, prefix, end)
        self._subscribers.add(sub)
        return sub

    def publish(self, event: WatchEvent) -> None:
        key = event.object.key
        for sub in tuple(self._subscribers):
            if sub.prefix <= key < sub.end:
                sub._offer(event)
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

"""In-process fan-out of watch events: one publisher, many subscribers filtered by key prefix.

Events are published once, in revision order, and each subscriber gets the same
``WatchEvent`` object (so the bytes are shared). A subscriber that falls more than
``max_pending`` events behind is cut off, as Kubernetes' cacher does with slow
watchers; its client re-watches from the last revision it saw.
"""

from __future__ import annotations

import asyncio
from collections import deque

from .interface import WatchEvent


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

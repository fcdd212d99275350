"""A work queue of keys that coalesces repeats and spaces out the work on each key, and the
worker loop that drains it.

``add`` marks a key as needing work (a key already waiting is not added twice); ``get``
returns the oldest waiting key whose last piece of work ended at least ``interval`` ago,
waiting as long as needed; ``done`` records that the work on a key ended. A burst of changes
to one object is therefore one piece of work per interval, with the latest state.
``run_worker`` takes keys one at a time, paced by a token bucket over all keys, and hands a
failure to the controller's own handler (retry now, later, or count it).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from .ratelimit import TokenBucket


class CoalescingQueue:
    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self.clock = clock
        self._waiting: dict[str, None] = {}
        self._last: dict[str, float] = {}
        self._wakeup = asyncio.Event()

    def __len__(self) -> int:
        return len(self._waiting)

    def add(self, key: str) -> None:
        self._waiting[key] = None
        self._wakeup.set()

    def forget(self, key: str) -> None:
        self._waiting.pop(key, None)
        self._last.pop(key, None)

    def done(self, key: str) -> None:
        self._last[key] = self.clock()

    async def get(self) -> str:
        while True:
            now = self.clock()
            earliest: float | None = None
            for key in self._waiting:
                ready = self._last.get(key, now - self.interval) + self.interval
                if ready <= now:
                    del self._waiting[key]
                    return key
                earliest = ready if earliest is None else min(earliest, ready)
            self._wakeup.clear()
            wait = None if earliest is None else earliest - now
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), wait)


async def run_worker(
    queue: CoalescingQueue,
    bucket: TokenBucket,
    sync: Callable[[str], Awaitable[object]],
    failed: Callable[[str, Exception], None],
) -> None:
    """Work the queue forever: one key at a time, at most the bucket's rate; ``failed`` is
    told of every exception ``sync`` raises (the loop goes on)."""
    while True:
        key = await queue.get()
        await bucket.acquire()
        try:
            await sync(key)
        except Exception as exc:
            failed(key, exc)
        finally:
            queue.done(key)

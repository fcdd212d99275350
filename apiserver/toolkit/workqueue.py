"""A work queue of keys that coalesces repeats and spaces out the work on each key, and the
worker loop that drains it.

``add`` marks a key as needing work (a key already waiting is not added twice); ``get``
returns the oldest waiting key whose last piece of work ended at least ``interval`` ago,
waiting as long as needed; ``done`` records that the work on a key ended. A burst of changes
to one object is therefore one piece of work per interval, with the latest state.
``run_worker`` takes keys one at a time, paced by a token bucket over all keys, and hands a
failure to the controller's own handler (retry now, later, or count it). ``run_sweeps`` is
the loop of a controller that looks at everything it owns whenever anything changes (and,
if the sweep asks, again after a time).
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

    def poke(self) -> None:
        """Look at the waiting keys again now (the clock moved: a test's clock)."""
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
            # A timeout scope, not wait_for: Python 3.11's wait_for swallows a cancellation
            # that arrives as the event is set (an add racing a close), and the loop would
            # then wait forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._wakeup.wait()


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


async def run_sweeps(
    sweep: Callable[[], Awaitable[float | None]],
    wakeup: asyncio.Event,
    failed: Callable[[Exception], None],
    *,
    retry_after: float | None = None,
) -> None:
    """Sweep now, then after every ``wakeup`` (set it when something changed), forever.

    ``sweep`` returns how long it may wait at most before the next sweep (None: until the
    next change); ``failed`` is told of what a sweep raised, and the next sweep comes after
    ``retry_after`` seconds or the next change."""
    while True:
        wakeup.clear()
        try:
            wait = await sweep()
        except Exception as exc:
            failed(exc)
            wait = retry_after
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(None if wait is None else max(wait, 0.0)):
                await wakeup.wait()

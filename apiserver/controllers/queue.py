"""A work queue of keys that coalesces repeats and spaces out the work on each key.

``add`` marks a key as needing work (a key already waiting is not added twice); ``get``
returns the oldest waiting key whose last piece of work ended at least ``interval`` ago,
waiting as long as needed; ``done`` records that the work on a key ended. A burst of changes
to one object is therefore one piece of work per interval, with the latest state. A
``TokenBucket`` bounds the rate over all keys.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable


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


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def _refill(self) -> None:
        now = self.clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now

    async def acquire(self) -> None:
        self._refill()
        while self._tokens < 1:
            await asyncio.sleep((1 - self._tokens) / self.rate)
            self._refill()
        self._tokens -= 1

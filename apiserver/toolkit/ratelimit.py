"""A token bucket: ``rate`` tokens a second, at most ``burst`` saved up.

Controllers wait for a token (``acquire``); admission takes one or says how long until the
next (``take``). A rate of 0 means no limit is wanted: callers do not make a bucket then.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class TokenBucket:
    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a token bucket needs rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def tokens(self) -> float:
        """The tokens there are now (refilled since the last count)."""
        now = self.clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
        self._at = now
        return self._tokens

    @property
    def full(self) -> bool:
        return self.tokens() >= self.burst

    def take(self, *, dry_run: bool = False) -> float:
        """Take a token: 0.0 if one was there, else the seconds until one will be (nothing
        taken). A dry run only checks."""
        tokens = self.tokens()
        if tokens < 1:
            return (1 - tokens) / self.rate
        if not dry_run:
            self._tokens = tokens - 1
        return 0.0

    async def acquire(self) -> None:
        """Wait for a token and take it."""
        while True:
            wait = self.take()
            if wait == 0:
                return
            # A timed wait for a refill, not polling for a condition someone else sets.
            await asyncio.sleep(wait)

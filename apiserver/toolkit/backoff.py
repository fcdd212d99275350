"""Exponential backoff between retries: of a failing list or watch (with jitter, so many
clients do not retry in step), and of a call retried a fixed number of times (the reviews,
as Kubernetes' webhook clients retry them)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable


class Backoff:
    def __init__(
        self,
        initial: float = 0.1,
        maximum: float = 30.0,
        factor: float = 2.0,
        *,
        jitter: float = 0.5,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """``jitter``: the share of each delay that is random (0: none); ``sleep``: how a
        wait is waited (a test records it instead)."""
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self.sleep = sleep
        self._next = initial

    def reset(self) -> None:
        self._next = self.initial

    def delay(self) -> float:
        """The next delay (up to ``jitter`` of it random), growing towards ``maximum``."""
        current = self._next
        self._next = min(self.maximum, self._next * self.factor)
        return current * (1 - self.jitter * random.random())

    async def wait(self) -> None:
        await self.sleep(self.delay())

    def delays(self, count: int) -> list[float]:
        """The first ``count`` delays of the schedule, without jitter, for a caller that
        retries a fixed number of times (the backoff's own state is not touched)."""
        return [min(self.maximum, self.initial * self.factor**i) for i in range(max(count, 0))]

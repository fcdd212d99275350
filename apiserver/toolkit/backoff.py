"""Exponential backoff with jitter between retries of a failing list or watch."""

from __future__ import annotations

import asyncio
import random


class Backoff:
    def __init__(self, initial: float = 0.1, maximum: float = 30.0, factor: float = 2.0) -> None:
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self._next = initial

    def reset(self) -> None:
        self._next = self.initial

    def delay(self) -> float:
        """The next delay (with up to 50% jitter), growing towards ``maximum``."""
        current = self._next
        self._next = min(self.maximum, self._next * self.factor)
        return current * (0.5 + random.random() / 2)

    async def wait(self) -> None:
        await asyncio.sleep(self.delay())

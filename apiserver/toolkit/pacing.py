"""Long computations on the event loop, in slices: yield whenever a time budget is used up.

``tick()`` is called after each unit of work; it returns at once until ``budget`` seconds
have passed since the last yield, then lets the loop run other tasks. ``longest`` records
the longest stretch the loop was held, for benchmarks and metrics.
"""

from __future__ import annotations

import asyncio
import time


class Pacer:
    def __init__(self, budget: float = 0.01) -> None:
        self.budget = budget
        self.longest = 0.0
        self._mark = time.perf_counter()

    def begin(self) -> None:
        """Work starts now (time spent waiting for work does not count)."""
        self._mark = time.perf_counter()

    def end(self) -> None:
        """Work stops here: account for the stretch since the last yield."""
        self.longest = max(self.longest, time.perf_counter() - self._mark)

    async def tick(self) -> None:
        now = time.perf_counter()
        if now - self._mark >= self.budget:
            self.longest = max(self.longest, now - self._mark)
            await asyncio.sleep(0)
            self._mark = time.perf_counter()

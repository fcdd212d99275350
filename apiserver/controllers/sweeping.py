"""A controller that looks at everything it owns whenever its source changes: the wiring
(a wakeup per source event, the background task, start and close) of such controllers, so
that each of them holds only its sweep."""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod

from ..sources import Source, SourceEvent
from ..tasks import BackgroundTask
from ..toolkit import run_sweeps


class SweepingController(ABC):
    """Sweeps once the source has synced, then after every change to it (and, when a sweep
    says so, after at most the seconds it returns)."""

    def __init__(self, source: Source, name: str, log: logging.Logger) -> None:
        self.source = source
        self.name = name
        self.log = log
        self.retry_after: float | None = None
        """Seconds before the sweep after a failed one, if no change comes first."""
        self._wakeup = asyncio.Event()
        self._task = BackgroundTask(name, self._run, log)
        source.add_handler(self._on_change)

    def _on_change(self, _event: SourceEvent) -> None:
        self._wakeup.set()

    async def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.close()

    async def _run(self) -> None:
        await self.source.wait_synced()
        await run_sweeps(self._sweep, self._wakeup, self._failed, retry_after=self.retry_after)

    @abstractmethod
    async def _sweep(self) -> float | None:
        """One look at everything; the most seconds to wait for the next (None: until a
        change)."""

    def _failed(self, exc: Exception) -> None:
        self.log.error("%s failed; trying again", self.name, exc_info=exc)

"""A named task that runs in the background until it is closed.

The loops of the server (informers, the device view, the controllers, the watch cache)
are meant to run until shutdown. If one ends early with an exception, that is logged when
it happens, with the traceback; ``close`` cancels the task and waits for it without
raising, so that one failed loop does not stop the others from being closed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any


class BackgroundTask:
    def __init__(
        self, name: str, run: Callable[[], Coroutine[Any, Any, None]], log: logging.Logger
    ) -> None:
        self.name = name
        self._run = run
        self._log = log
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the task, unless it was started and not closed since."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=self.name)
            self._task.add_done_callback(self._ended)

    async def close(self) -> None:
        """Cancel the task and wait until it has ended; never raises its exception."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait((task,))

    def _ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self._log.error("%s failed", self.name, exc_info=exc)

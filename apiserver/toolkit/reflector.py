"""The one list-then-watch loop, as client-go's reflector: list, watch, and recover.

The loop lists (at start, and whenever the history the watch needs is gone), then watches
until the watch ends, and watches again from where it was. A failure of a ``transient``
kind is retried after a backoff, resuming the watch; an expired revision (``gone``) lists
again at once; any other failure lists again after a backoff. A watch that ends soon
without delivering anything waits a backoff before the next one, so a broken upstream is
not hammered. What a list and a watch do with what they read is the owner's: the watch
cache keeps a map and a window, a source keeps a cache and tells its handlers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from .backoff import Backoff

QUICK_END = 1.0
"""A watch that ends sooner than this without delivering anything waits a backoff first."""


class Reflector:
    def __init__(
        self,
        name: str,
        *,
        list_all: Callable[[], Awaitable[None]],
        watch: Callable[[], Awaitable[bool]],
        gone: tuple[type[Exception], ...],
        transient: tuple[type[Exception], ...],
        log: logging.Logger,
        backoff: Backoff | None = None,
        must_list: Callable[[], None] | None = None,
    ) -> None:
        """``list_all`` reads everything and replaces the owner's state; ``watch`` follows
        one watch from the owner's revision until it ends, True if it delivered anything;
        ``must_list`` is told when the owner's state can no longer be followed (it will be
        listed again)."""
        self.name = name
        self._list_all = list_all
        self._watch = watch
        self.gone = gone
        self.transient = transient
        self.log = log
        self.backoff = backoff or Backoff()
        self._must_list = must_list
        self.needs_list = True
        self.relists = 0
        """How many times it listed again after its first list."""
        self.expirations = 0
        """How many times its revision was too old for a watch (410 Gone)."""
        self.failures = 0
        """How many list or watch attempts failed and were retried after a backoff."""
        self._listed = False
        self.stopped = False

    def stop(self) -> None:
        """End ``run`` once the list or watch event being handled is done (its owner's
        watch checks ``stopped`` after each event)."""
        self.stopped = True

    def _relist(self) -> None:
        self.needs_list = True
        if self._must_list is not None:
            self._must_list()

    async def run(self) -> None:
        while not self.stopped:
            try:
                if self.needs_list:
                    await self._list_all()
                    if self._listed:
                        self.relists += 1
                    self._listed = True
                    self.backoff.reset()
                    self.needs_list = False
                    if self.stopped:
                        return
                began = time.monotonic()
                if await self._watch():
                    self.backoff.reset()
                elif time.monotonic() - began < QUICK_END:
                    await self.backoff.wait()  # the watch ended at once: do not spin
            except self.gone as err:
                self.log.info("%s: %s; listing again", self.name, err)
                self.expirations += 1
                self._relist()
            except self.transient as err:
                self.failures += 1
                self.log.warning("%s: %s; retrying", self.name, err)
                await self.backoff.wait()
            except Exception:
                self.failures += 1
                self.log.exception("%s failed; listing again", self.name)
                self._relist()
                await self.backoff.wait()

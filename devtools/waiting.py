"""Waiting on a condition instead of sleeping: poll it at a short interval until it holds or a
generous deadline passes, then fail naming what did not happen.

``wait_for`` is for synchronous code (threads, child processes, blocking clients);
``eventually`` is for coroutines, and its condition may itself be a coroutine function.
Both return the condition's first truthy value, so a poll can hand back what it found.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

TIMEOUT = 30.0
"""Long enough for a loaded two-core machine; a condition that holds returns at once."""


class WaitTimeout(AssertionError):
    """The condition did not hold before the deadline."""


def _message(what: str | None, condition: Callable[..., object], timeout: float) -> str:
    name = what or getattr(condition, "__name__", repr(condition))
    return f"timed out after {timeout:g} s waiting for {name}"


def wait_for(
    condition: Callable[[], T],
    what: str | None = None,
    *,
    timeout: float = TIMEOUT,
    interval: float = 0.05,
) -> T:
    """Call ``condition`` until it returns something truthy, and return that."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"{_message(what, condition, timeout)}; last: {result!r}")
        time.sleep(interval)  # the poll interval


async def eventually(
    condition: Callable[[], T | Awaitable[T]],
    what: str | None = None,
    *,
    timeout: float = TIMEOUT,  # noqa: ASYNC109 - the deadline is what callers choose
    interval: float = 0.01,
) -> T:
    """Await (or call) ``condition`` until it gives something truthy, and return that."""
    last: object = None
    try:
        async with asyncio.timeout(timeout) as scope:
            while True:
                result = condition()
                value: T = await result if inspect.isawaitable(result) else result
                if value:
                    return value
                last = value
                await asyncio.sleep(interval)  # the poll interval
    except TimeoutError:
        if not scope.expired():
            raise  # the condition's own timeout, not the deadline
        raise WaitTimeout(f"{_message(what, condition, timeout)}; last: {last!r}") from None


async def started(coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """A task running ``coroutine``, returned once the coroutine has run up to the point where
    it first waits (or has finished): whatever it checks before waiting has been checked."""
    entered = asyncio.Event()

    async def run() -> T:
        entered.set()
        return await coroutine  # runs on without yielding until the coroutine waits

    task = asyncio.create_task(run())
    await entered.wait()  # this task resumes only after ``run`` has yielded
    return task

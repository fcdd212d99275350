"""machinery/disconnect.py: work whose client has gone is cancelled and ends before the
answer (499); work that ends first is answered; a ``receive`` that cannot tell leaves the
work alone; a cancelled caller takes its work with it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from apiserver.machinery import errors
from apiserver.machinery.disconnect import CLIENT_CLOSED, unless_client_leaves


class Connection:
    """An ASGI ``receive`` after the body was read: it returns only on disconnect."""

    def __init__(self) -> None:
        self.lost = asyncio.Event()
        self.fails = False

    async def receive(self) -> dict[str, Any]:
        if self.fails:
            raise RuntimeError("cannot tell")
        await self.lost.wait()
        return {"type": "http.disconnect"}


class Work:
    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.cancelled = False
        self.ended = False

    async def run(self) -> str:
        try:
            await self.release.wait()
            return "answer"
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        finally:
            self.ended = True


async def test_work_that_ends_first_is_answered() -> None:
    connection, work = Connection(), Work()
    work.release.set()
    assert await unless_client_leaves(connection.receive, work.run(), "test") == "answer"
    assert not work.cancelled


async def test_a_client_that_goes_cancels_the_work_before_the_answer() -> None:
    connection, work = Connection(), Work()
    call = asyncio.create_task(unless_client_leaves(connection.receive, work.run(), "test"))
    await asyncio.sleep(0)
    assert not call.done()
    connection.lost.set()
    with pytest.raises(errors.StatusError) as refused:
        await call
    assert refused.value.code == CLIENT_CLOSED
    assert work.cancelled
    assert work.ended  # it had ended when the caller got its answer


async def test_a_receive_that_cannot_tell_leaves_the_work_alone() -> None:
    connection, work = Connection(), Work()
    connection.fails = True
    call = asyncio.create_task(unless_client_leaves(connection.receive, work.run(), "test"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not call.done()
    work.release.set()
    assert await call == "answer"
    assert not work.cancelled


async def test_a_cancelled_caller_takes_its_work_with_it() -> None:
    connection, work = Connection(), Work()
    call = asyncio.create_task(unless_client_leaves(connection.receive, work.run(), "test"))
    await asyncio.sleep(0)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    for _ in range(3):
        await asyncio.sleep(0)
    assert work.cancelled

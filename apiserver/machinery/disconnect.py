"""Stop work whose client has gone: ``unless_client_leaves``.

A review computes its answer while the client waits, and the answer may take seconds of
CPU (an allocation search). If the client closes the connection meanwhile nobody will read
the answer, so the work is cancelled, as kube-apiserver cancels a request's context when its
client goes; the work stops at its next await (the allocation search pauses every chunk).

How the server learns of it: once the request body has been read, the next ASGI
``receive`` returns only when the connection is lost (``http.disconnect``). A ``receive``
that fails (a middleware that cannot tell) leaves the work alone. Only kinds whose create
stores nothing the client must know of opt in (``ReviewResource``): a write cut in the
middle is not what a caller of a stored kind expects. The cancelled request is logged and
answered 499 (nginx's "client closed request"), which only the access log sees.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable
from typing import TypeVar

from starlette.types import Receive

from . import errors

T = TypeVar("T")

log = logging.getLogger("apiserver")

CLIENT_CLOSED = 499


async def unless_client_leaves(receive: Receive, work: Awaitable[T], what: str) -> T:
    """``work``'s result, or a 499 ``StatusError`` once the client has gone and ``work``
    has been cancelled and has ended. Call it after the request body has been read."""
    started = time.monotonic()
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait((task, gone), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        gone.cancel()
    if task.done() or not gone.result():
        return await task
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    log.info(
        "%s: the client went away after %.2fs; stopped working on its answer",
        what,
        time.monotonic() - started,
    )
    raise errors.StatusError(CLIENT_CLOSED, "ClientClosed", "the client went away")


async def _disconnected(receive: Receive) -> bool:
    """True when the connection is lost; False if ``receive`` cannot tell."""
    try:
        while True:
            message = await receive()
            if message.get("type") == "http.disconnect":
                return True
    except Exception:
        return False

"""The HTTP/1.1 connection protocol: uvicorn's httptools protocol with limits on the head
and deadlines for reading a request.

httptools gathers a header value (and the request target) in memory until it ends, with no
bound of its own; eight clients sending 64 MB headers took the server to 667 MB and stalled
everyone else. Here the bytes of each request head are counted as they arrive, before any
routing or authentication: past ``MAX_HEAD_BYTES`` (Kubernetes' 1 MiB ``MaxHeaderBytes``)
the connection gets 431, past ``MAX_TARGET_BYTES`` of request target 414, and a head that
does not parse 400 — each a ``Status`` in JSON, then the connection is closed. The
normal path adds one comparison per chunk read.

Deadlines, as Go's ``http.Server`` sets them for kube-apiserver: a request's head must
arrive within the read-header timeout (kube-apiserver: 32 s), counted from the connection
for its first request and from the first byte for each later one, else the connection is
dropped without an answer (as Go does); the body must then arrive within the read timeout,
else the request gets 408 and the connection is closed. uvicorn has neither (a client that
sent half a head held its connection, and a file descriptor, forever). Each deadline is one
timer handle on the event loop, armed when a head or body starts to be awaited and
cancelled when it is complete: no task and no polling per connection, and a request that
arrives in one read (a GET) arms no body timer at all. Idle time between requests is
uvicorn's keep-alive timeout (``serving.IDLE_TIMEOUT``); a response being written (a watch)
is no longer reading.

Writing has a deadline too: a client that reads nothing of a response for the write-stall
timeout (the transport has asked the protocol to pause writing and not resumed) has its
connection reset. Without it a response whose client stopped reading stays blocked in its
write for ever, holding what it was about to send. A watch the watch cache cuts off for
falling behind is reset at once, through the callable each request's scope carries under
``ABORT_EXTENSION``. A reset (linger 0) rather than a close: the kernel would otherwise keep
trying to deliver what is buffered to a client that does not read.

The TLS handshake itself is bounded by the event loop's handshake timeout (60 s), which
uvicorn does not let us set.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import logging
import socket
import struct
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ..machinery import ABORT_EXTENSION
from .onewrite import OneWriteResponses

MAX_HEAD_BYTES = 1024 * 1024
"""Most bytes of request line and headers together (Kubernetes: 1 MiB)."""

MAX_TARGET_BYTES = 64 * 1024
"""Most bytes of the request target (path and query)."""

READ_HEADER_TIMEOUT = 32.0
"""Seconds a request's head may take to arrive (kube-apiserver's ``ReadHeaderTimeout``)."""

READ_TIMEOUT = 60.0
"""Seconds a request's body may take to arrive once its head has (kube-apiserver's default
request timeout, which is what bounds reading a body there)."""

WRITE_STALL_TIMEOUT = 60.0
"""Seconds a client may leave a response unread (writing paused) before it is cut off."""

LINGER_SECONDS = 1.0
"""How long a refused connection stays open, not read, so the client can read the answer
before the close (closing with unread input resets the connection and may lose it)."""

log = logging.getLogger("apiserver")


class _Refused(Exception):
    """Raised from a parser callback to stop parsing a head that is over a limit (httptools
    wraps it, and uvicorn then calls ``send_400_response``, which sends the refusal)."""


def status_response(code: int, message: str) -> bytes:
    """A whole HTTP/1.1 response carrying a ``Status`` failure, closing the connection."""
    phrase = http.HTTPStatus(code).phrase
    body = orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": phrase.replace(" ", "").replace("-", ""),
            "code": code,
        }
    )
    head = (
        f"HTTP/1.1 {code} {phrase}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class BoundedHttpToolsProtocol(OneWriteResponses, HttpToolsProtocol):
    """One connection; see the module docstring for the limits (and ``onewrite`` for how
    a response is written)."""

    read_header_timeout = READ_HEADER_TIMEOUT
    read_timeout = READ_TIMEOUT
    write_stall_timeout = WRITE_STALL_TIMEOUT

    _in_head = True
    """Whether the bytes now arriving belong to a request head (true from the first byte
    of a request until its headers are complete)."""
    _in_body = False
    """Whether a request's head is complete and its body is not."""
    _head_bytes = 0
    _target_bytes = 0
    _refused = False
    _refusal: tuple[int, str] | None = None
    _head_timer: asyncio.TimerHandle | None = None
    _body_timer: asyncio.TimerHandle | None = None
    _write_timer: asyncio.TimerHandle | None = None

    @classmethod
    def with_timeouts(
        cls,
        read_header_timeout: float = READ_HEADER_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
        write_stall_timeout: float = WRITE_STALL_TIMEOUT,
    ) -> type[BoundedHttpToolsProtocol]:
        """This protocol with other deadlines (uvicorn makes the protocol from its class)."""
        if min(read_header_timeout, read_timeout, write_stall_timeout) <= 0:
            raise ValueError(
                "--read-header-timeout, --read-timeout and --write-stall-timeout must be positive"
            )
        return type(
            cls.__name__,
            (cls,),
            {
                "read_header_timeout": read_header_timeout,
                "read_timeout": read_timeout,
                "write_stall_timeout": write_stall_timeout,
            },
        )

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer = self.loop.call_later(self.read_header_timeout, self._head_timed_out)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        # A chunk arriving inside a head may also finish it; counting the whole chunk then
        # errs by at most one read (256 KiB) and keeps the common path to one check.
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > MAX_HEAD_BYTES and not self._refused:
            self._refuse(
                431, f"the request headers are larger than the limit of {MAX_HEAD_BYTES} bytes"
            )
        # Deadlines only for what this read left unfinished.
        if self._refused:
            return
        if self._in_head and self._head_timer is None:
            self._head_timer = self.loop.call_later(self.read_header_timeout, self._head_timed_out)
        elif self._in_body and self._body_timer is None:
            self._body_timer = self.loop.call_later(self.read_timeout, self._body_timed_out)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0
        self._target_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._target_bytes += len(url)
        if self._target_bytes > MAX_TARGET_BYTES:
            self._refusal = (
                414,
                f"the request target is longer than the limit of {MAX_TARGET_BYTES} bytes",
            )
            raise _Refused
        super().on_url(url)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._in_body = True
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        # beside any extension another hook of the protocol put there
        scope: Any = self.scope
        scope.setdefault("extensions", {})[ABORT_EXTENSION] = self._abort_cut_watch
        super().on_headers_complete()

    def _abort_cut_watch(self) -> None:
        """Drop the connection of a watch the watch cache cut off (its client stopped
        reading: a close would wait for it to read what is buffered)."""
        self._reset()

    def on_message_complete(self) -> None:
        self._in_body = False
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        super().on_message_complete()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(self.write_stall_timeout, self._write_stalled)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def _cancel_timers(self) -> None:
        for timer in (self._head_timer, self._body_timer, self._write_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = self._write_timer = None

    def _write_stalled(self) -> None:
        self._write_timer = None
        log.info(
            "closed a connection to %s: it read nothing of its response for %g s",
            self.client,
            self.write_stall_timeout,
        )
        self._reset()

    def _reset(self) -> None:
        """Drop the connection with what is still buffered for a client that does not read:
        a TCP reset (linger 0), not a close that the kernel would keep trying to deliver."""
        if self.transport.is_closing():
            return
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()

    def _head_timed_out(self) -> None:
        self._head_timer = None
        log.debug(
            "closed a connection from %s: no request head within %g s",
            self.client,
            self.read_header_timeout,
        )
        # Nothing to answer, as Go does; abort rather than close, which would wait for
        # the client to acknowledge the TLS close, keeping the descriptor of a client that
        # does not read.
        self.transport.abort()

    def _body_timed_out(self) -> None:
        self._body_timer = None
        cycle = self.cycle
        if cycle is None or cycle.response_started:
            self.transport.abort()
            return
        # The application waits for the rest of the body: it reads a disconnect instead,
        # and whatever it sends after is dropped, so that the 408 is the answer.
        cycle.disconnected = True
        cycle.message_event.set()
        self._refused = True
        self._answer_and_close(
            408, f"the request body did not arrive within {self.read_timeout:g} s"
        )

    def send_400_response(self, msg: str) -> None:
        # uvicorn's answer to a head that does not parse is plain text; clients expect a
        # Status. A head stopped for being over a limit ends here too.
        self._refuse(*(self._refusal or (400, "the request could not be parsed as HTTP/1.1")))

    def _refuse(self, code: int, message: str) -> None:
        self._refused = True
        if self.cycle is not None and not self.cycle.response_complete:
            # A response is being written on this connection: no room for another one.
            self._cancel_timers()
            self.transport.close()
            return
        self._answer_and_close(code, message)

    def _answer_and_close(self, code: int, message: str) -> None:
        self._cancel_timers()
        log.info("refused a request from %s: %s", self.client, message)
        self.transport.write(status_response(code, message))
        self.transport.pause_reading()
        self.loop.call_later(LINGER_SECONDS, self.transport.close)

"""The HTTP/1.1 connection protocol: uvicorn's httptools protocol with limits on the head.

httptools gathers a header value (and the request target) in memory until it ends, with no
bound of its own; eight clients sending 64 MB headers took the server to 667 MB and stalled
everyone else. Here the bytes of each request head are counted as they arrive, before any
routing or authentication: past ``MAX_HEAD_BYTES`` (Kubernetes' 1 MiB ``MaxHeaderBytes``)
the connection gets 431, past ``MAX_TARGET_BYTES`` of request target 414, and a head that
does not parse 400 — each a ``Status`` in JSON, then the connection is closed. The
normal path adds one comparison per chunk read.
"""

from __future__ import annotations

import http
import logging

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEAD_BYTES = 1024 * 1024
"""Most bytes of request line and headers together (Kubernetes: 1 MiB)."""

MAX_TARGET_BYTES = 64 * 1024
"""Most bytes of the request target (path and query)."""

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


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """One connection; see the module docstring for the limits."""

    _in_head = True
    """Whether the bytes now arriving belong to a request head (true from the first byte
    of a request until its headers are complete)."""
    _head_bytes = 0
    _target_bytes = 0
    _refused = False
    _refusal: tuple[int, str] | None = None

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
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        # uvicorn's answer to a head that does not parse is plain text; clients expect a
        # Status. A head stopped for being over a limit ends here too.
        self._refuse(*(self._refusal or (400, "the request could not be parsed as HTTP/1.1")))

    def _refuse(self, code: int, message: str) -> None:
        self._refused = True
        if self.cycle is not None and not self.cycle.response_complete:
            # A response is being written on this connection: no room for another one.
            self.transport.close()
            return
        log.info("refused a request from %s: %s", self.client, message)
        self.transport.write(status_response(code, message))
        self.transport.pause_reading()
        self.loop.call_later(LINGER_SECONDS, self.transport.close)

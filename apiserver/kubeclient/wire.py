"""Kept-alive HTTP/1.1 connections to one API server, for calls whose answer is read whole.

The request is framed here, the answer parsed by httptools (llhttp, in C) and TLS left to
the event loop's transport. A call costs its client a third to a half of the CPU it cost
through httpx's request and response objects carried by aiohttp (bench/RESULTS.md
"Client layer"); the scheduler shim makes four such calls per pod. Streams (watches) and
requests through a proxy stay with httpx (``transport.network``).

A connection is reused while the server keeps it alive, and dropped when it closes or has
been idle ``KEEP_IDLE`` seconds (a server closes idle connections on its own schedule). A
call on a reused connection that the server closed before any byte of an answer raises
``Closed``: the caller may send it again when that is safe. A call that times out or is
cancelled closes its connection, since an answer may still be on its way.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from typing import cast

import httptools

KEEP_IDLE = 15.0
"""Seconds a connection may sit idle and still be reused (aiohttp's default too)."""
MAX_CONNECTIONS = 100
"""Connections one wire keeps open at once; a call beyond it waits for one to be free."""
_TARGET_SAFE = "/?&=%:@!$'()*+,;~-._"
"""What a request target keeps as it is when it must be escaped (see ``_target``)."""


class Closed(ConnectionError):
    """The server closed the connection before any byte of an answer."""


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer read whole."""

    status_code: int
    content: bytes
    sent: int
    """The bytes of the request's body."""

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class _Connection(asyncio.Protocol):
    """One connection, one request at a time."""

    def __init__(self) -> None:
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.WriteTransport | None = None
        self._answer: asyncio.Future[tuple[int, bytes]] | None = None
        self._body: list[bytes] = []
        self._heard = False
        """Any byte of the current answer arrived."""
        self._framed = False
        """The current answer says where it ends (a length or chunks), not at the close."""
        self._status = 0
        self.open = False
        self.idle_since = 0.0

    # -- asyncio's callbacks --------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but they write alike.
        self._transport = cast(asyncio.WriteTransport, transport)
        self.open = True

    def data_received(self, data: bytes) -> None:
        self._heard = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as err:
            self._fail(ConnectionError(f"the answer is not HTTP/1.1: {err}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        if self._answer is None or self._answer.done():
            return
        if not self._heard:
            self._fail(Closed("the server closed the connection before answering"))
        elif not self._framed and self._status:
            self._finish()  # an answer that ends where the connection does
        else:
            self._fail(ConnectionError("the connection closed in the middle of an answer"))

    # -- httptools' callbacks -------------------------------------------------------

    def on_message_begin(self) -> None:
        self._body = []
        self._framed = False
        self._status = 0

    def on_header(self, name: bytes, _value: bytes) -> None:
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self._framed = True

    def on_headers_complete(self) -> None:
        self._status = self._parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        if self._status < 200:
            return  # an interim answer (1xx): the final one follows
        if not self._parser.should_keep_alive():
            self.close()
        self._finish()

    # -- the call -------------------------------------------------------------------

    async def exchange(self, request: bytes) -> tuple[int, bytes]:
        assert self._transport is not None
        self._heard = False
        self._status = 0
        self._answer = asyncio.get_running_loop().create_future()
        self._transport.write(request)
        return await self._answer

    def close(self) -> None:
        self.open = False
        if self._transport is not None:
            self._transport.close()

    def _finish(self) -> None:
        answer, self._answer = self._answer, None
        if answer is not None and not answer.done():
            answer.set_result((self._status, b"".join(self._body)))

    def _fail(self, err: Exception) -> None:
        answer, self._answer = self._answer, None
        if answer is not None and not answer.done():
            answer.set_exception(err)


class Wire:
    """Calls to the server at ``url`` (``http`` or ``https``) over kept-alive connections.
    ``context``: the TLS context; ``server_name``: the TLS server name to ask for, when
    not the URL's host; ``timeout``: the seconds a call may take, a connection's wait
    included."""

    def __init__(
        self,
        url: str,
        context: ssl.SSLContext | None,
        *,
        server_name: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.timeout = timeout
        parts = urllib.parse.urlsplit(url)
        secure = parts.scheme == "https"
        self._host = parts.hostname or "localhost"
        self._port = parts.port or (443 if secure else 80)
        self._ssl = context if secure else None
        self._server_name = (server_name or self._host) if secure else None
        self._base = parts.path.rstrip("/")
        self._host_line = f"Host: {parts.netloc.rpartition('@')[2]}\r\n"
        self._idle: collections.deque[_Connection] = collections.deque()
        self._slots = asyncio.Semaphore(MAX_CONNECTIONS)
        self._closed = False

    async def call(self, method: str, target: str, headers: str, body: bytes | None) -> Answer:
        """One request, its answer read whole. ``target``: the path and query; ``headers``:
        the lines to send besides ``Host`` and the body's length, each ending in CRLF.
        Raises ``Closed`` (a reused connection the server had closed), ``ConnectionError``,
        ``OSError`` or ``TimeoutError``."""
        head = f"{method} {_target(self._base + target)} HTTP/1.1\r\n{self._host_line}{headers}"
        if body is not None:
            head += f"Content-Length: {len(body)}\r\n"
        request = head.encode("latin-1") + b"\r\n" + (body or b"")
        async with self._slots, asyncio.timeout(self.timeout):
            connection = await self._connection()
            try:
                status, content = await connection.exchange(request)
            except BaseException:
                connection.close()
                raise
            self._put_back(connection)
        return Answer(status, content, len(body or b""))

    async def aclose(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.pop().close()

    async def _connection(self) -> _Connection:
        """The connection used last, if still alive; else a new one."""
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if connection.open and now - connection.idle_since < KEEP_IDLE:
                return connection
            connection.close()
        _, connection = await asyncio.get_running_loop().create_connection(
            _Connection, self._host, self._port, ssl=self._ssl, server_hostname=self._server_name
        )
        return connection

    def _put_back(self, connection: _Connection) -> None:
        if self._closed or not connection.open:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        self._idle.append(connection)
        # The oldest idle connections are the first to outlive KEEP_IDLE or be closed.
        while self._idle and not (
            self._idle[0].open and connection.idle_since - self._idle[0].idle_since < KEEP_IDLE
        ):
            self._idle.popleft().close()


def _target(target: str) -> str:
    """``target`` as a request line may carry it: anything but visible ASCII
    percent-escaped (as httpx escapes a URL), so no byte can end the line early."""
    if target.isascii() and target.isprintable() and " " not in target:
        return target
    return urllib.parse.quote(target, safe=_TARGET_SAFE)

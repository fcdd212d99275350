"""Connections as kube-apiserver handles them: deadlines for reading a request, clients
that stop reading, and TLS.

A server started with short ``--read-header-timeout`` and ``--read-timeout`` drops
connections whose request head does not arrive in time (half-sent heads, and connections
that send nothing), answers 408 to a body that does not arrive, and keeps serving fresh
requests and open watches meanwhile. A watcher that stops reading while events are written
is cut off by the watch cache (logged, counted in ``apiserver_terminated_watchers_total``)
and its connection reset, while a watcher that reads goes on; a client that reads nothing of
a response is reset after ``--write-stall-timeout``. TLS 1.2 is offered with AEAD suites only.
"""

from __future__ import annotations

import asyncio
import resource
import select
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import pytest

from devtools.waiting import wait_for

from .harness import ServerProcess, start_server
from .objects import RSP_PATH, rsp, unique
from .test_request_limits import connect, read_response

HEADER_TIMEOUT = 3.0
BODY_TIMEOUT = 3.0
WRITE_STALL_TIMEOUT = 3.0
HALF_OPEN = 500
SILENT = 50
CLIENT_KEEP_ALIVE = 5.0
"""httpx's keep-alive expiry: how long it keeps an idle connection before closing it."""
"""Of the half-open connections, how many send nothing at all after the handshake."""


def _raise_fd_limit(wanted: int) -> None:
    """Raise this process's soft limit of open files (the server started after inherits
    it): the test holds a few hundred connections, and so does the server."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        limit = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))


@pytest.fixture(scope="module")
def timed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    _raise_fd_limit(4 * HALF_OPEN + 1024)
    proc = start_server(
        tmp_path_factory.mktemp("conns"),
        [
            "--read-header-timeout",
            str(HEADER_TIMEOUT),
            "--read-timeout",
            str(BODY_TIMEOUT),
            "--write-stall-timeout",
            str(WRITE_STALL_TIMEOUT),
            "--log-level",
            "info",
        ],
    )
    yield proc
    proc.stop()


@dataclass
class HalfOpen:
    """A TLS connection that sent part of a request head (or nothing) and then waits."""

    sock: ssl.SSLSocket
    opened: float
    closed: float | None = None


def _open_half(server: ServerProcess, partial: bytes) -> HalfOpen:
    opened = time.monotonic()
    sock = connect(server)
    if partial:
        sock.sendall(partial)
    sock.setblocking(False)
    return HalfOpen(sock, opened)


def _closed_by_server(conn: HalfOpen) -> bool:
    """Whether the server has closed (or reset) the connection; reads what is there."""
    try:
        while True:
            data = conn.sock.recv(65536)
            if not data:
                return True
            # A half-sent request is never answered; any data here is a bug.
            raise AssertionError(f"the server answered a half-sent request: {data[:200]!r}")
    except (ssl.SSLWantReadError, BlockingIOError):
        return False
    except (ssl.SSLZeroReturnError, ssl.SSLEOFError, ConnectionError):
        return True


@dataclass
class FreshRequests:
    """New connections, each asking for /version, until told to stop."""

    server: ServerProcess
    stop: threading.Event = field(default_factory=threading.Event)
    answered: int = 0
    failures: list[str] = field(default_factory=list)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                with self.server.client(timeout=30.0) as client:
                    response = client.get("/version")
                if response.status_code == 200:
                    self.answered += 1
                else:
                    self.failures.append(f"{response.status_code} {response.text[:200]}")
            except httpx.HTTPError as exc:
                self.failures.append(repr(exc))


def test_half_open_connections_are_closed_while_fresh_requests_are_served(
    timed_server: ServerProcess,
) -> None:
    server = timed_server
    with server.client(timeout=60.0) as client:
        # A watch open all along: it outlives every deadline (it is past reading).
        name = unique("conns-watch")
        listed = client.get(RSP_PATH).json()["metadata"]["resourceVersion"]
        with client.stream(
            "GET",
            RSP_PATH,
            params={"watch": "true", "resourceVersion": listed, "timeoutSeconds": "120"},
        ) as watch:
            assert watch.status_code == 200
            fresh = FreshRequests(server)
            worker = threading.Thread(target=fresh.run, daemon=True)
            worker.start()
            conns = [
                _open_half(
                    server,
                    b"" if i < SILENT else b"GET /version HTTP/1.1\r\nHost: x\r\nX-Half: ",
                )
                for i in range(HALF_OPEN)
            ]
            selector = selectors.DefaultSelector()
            for conn in conns:
                selector.register(conn.sock, selectors.EVENT_READ, conn)

            def all_closed() -> bool:
                for key, _ in selector.select(timeout=0.5):
                    conn = key.data
                    if _closed_by_server(conn):
                        conn.closed = time.monotonic()
                        selector.unregister(conn.sock)
                return not selector.get_map()

            try:
                wait_for(
                    all_closed,
                    f"the server to close {HALF_OPEN} half-open connections",
                    timeout=HEADER_TIMEOUT + 60.0,
                )
            finally:
                fresh.stop.set()
                worker.join(timeout=60)
                selector.close()
                for conn in conns:
                    conn.sock.close()
            # Closed by the deadline, not by anything earlier.
            early = [c.closed - c.opened for c in conns if c.closed - c.opened < HEADER_TIMEOUT]  # type: ignore[operator]
            assert not early, f"closed before the read-header timeout: {early[:5]}"
            assert fresh.failures == []
            assert fresh.answered > 0
            # The watch is still there: it gets an event written after every deadline.
            created = client.post(RSP_PATH, json=rsp(name))
            assert created.status_code == 201, created.text
            for line in watch.iter_lines():
                if line.strip():
                    event = orjson.loads(line)
                    if event["object"]["metadata"]["name"] == name:
                        assert event["type"] == "ADDED"
                        break


def test_a_later_request_on_a_kept_connection_has_its_own_deadline(
    timed_server: ServerProcess,
) -> None:
    sock = connect(timed_server)
    try:
        sock.sendall(
            b"GET /version HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {timed_server.token}\r\n\r\n".encode()
        )
        code, _headers, _body = read_response(sock)
        assert code == 200
        started = time.monotonic()
        sock.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n")  # and no more
        conn = HalfOpen(sock, started)
        sock.setblocking(False)
        wait_for(lambda: _closed_by_server(conn), "the kept connection to be closed")
        assert time.monotonic() - started >= HEADER_TIMEOUT
    finally:
        sock.close()


def test_a_connection_idle_past_a_clients_keep_alive_still_serves(server: ServerProcess) -> None:
    """Idle longer than httpx keeps a connection (5 s), the server has not closed it: the
    client, not the server, ends an idle connection, so a reuse never meets a close."""
    sock = connect(server)
    request = (
        b"GET /version HTTP/1.1\r\nHost: x\r\n"
        + f"Authorization: Bearer {server.token}\r\n\r\n".encode()
    )
    try:
        sock.sendall(request)
        assert read_response(sock)[0] == 200
        time.sleep(CLIENT_KEEP_ALIVE + 1)
        sock.sendall(request)
        assert read_response(sock)[0] == 200
    finally:
        sock.close()


def test_a_body_that_does_not_arrive_is_answered_408(timed_server: ServerProcess) -> None:
    name = unique("conns-slow")
    body = orjson.dumps(rsp(name))
    sock = connect(timed_server)
    try:
        # Taken before sending: the server's clock starts when the headers arrive.
        started = time.monotonic()
        sock.sendall(
            f"POST {RSP_PATH} HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {timed_server.token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body[: len(body) // 2]
        )
        code, headers, answer = read_response(sock)
        assert time.monotonic() - started >= BODY_TIMEOUT
        assert code == 408
        assert headers["connection"] == "close"
        status = orjson.loads(answer)
        assert status["kind"] == "Status"
        assert status["code"] == 408
        assert sock.recv(65536) == b""
    finally:
        sock.close()
    with timed_server.client() as client:
        assert client.get(f"{RSP_PATH}/{name}").status_code == 404


# -- TLS -------------------------------------------------------------------------------

CBC_ONLY = ":".join(
    [
        "ECDHE-ECDSA-AES128-SHA",
        "ECDHE-ECDSA-AES256-SHA",
        "ECDHE-ECDSA-AES128-SHA256",
        "ECDHE-ECDSA-AES256-SHA384",
        "ECDHE-RSA-AES128-SHA",
        "ECDHE-RSA-AES256-SHA",
        "ECDHE-RSA-AES128-SHA256",
        "AES128-SHA",
        "AES256-SHA",
        "AES128-SHA256",
    ]
)


def _tls12_client(server: ServerProcess, ciphers: str) -> ssl.SSLContext:
    context = server.ssl_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(ciphers)
    return context


def _handshake(server: ServerProcess, context: ssl.SSLContext) -> tuple[str, str]:
    """The version and cipher suite agreed on with the server."""
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=30) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as sock,
    ):
        version = sock.version()
        cipher = sock.cipher()
    assert version is not None
    assert cipher is not None
    return version, cipher[0]


def test_tls12_with_only_cbc_suites_is_refused(server: ServerProcess) -> None:
    context = _tls12_client(server, CBC_ONLY + ":@SECLEVEL=0")
    with pytest.raises(ssl.SSLError):
        _handshake(server, context)


@pytest.mark.parametrize(
    "suite",
    [
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
    ],
)
def test_tls12_with_an_aead_suite_is_accepted(server: ServerProcess, suite: str) -> None:
    assert _handshake(server, _tls12_client(server, suite)) == ("TLSv1.2", suite)
    # And a request goes through on it.
    with httpx.Client(
        base_url=server.url,
        verify=_tls12_client(server, suite),
        headers={"Authorization": f"Bearer {server.token}"},
    ) as client:
        assert client.get("/version").status_code == 200


def test_tls13_is_offered_as_before(server: ServerProcess) -> None:
    version, _suite = _handshake(server, server.ssl_context())
    assert version == "TLSv1.3"


# -- watchers that stop reading --------------------------------------------------------

TERMINATED = 'apiserver_terminated_watchers_total{resource="resourceslicepatches.resource.k8s.io"}'
MAX_WRITES = 20_000
"""A bound on the events the test writes for the stalled watcher to be cut: far more than
its buffer holds (a tenth of 10,000 events or 64 MiB, plus what the sockets hold)."""


@pytest.fixture(scope="module")
def stall_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # A short stall budget; the write-stall deadline stays long, so that what ends the
    # watch is the watch cache cutting it off.
    proc = start_server(
        tmp_path_factory.mktemp("stall"),
        ["--watch-stall-timeout", "1", "--write-stall-timeout", "600", "--log-level", "info"],
    )
    yield proc
    proc.stop()


def _terminated(client: httpx.Client) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(TERMINATED):
            return float(line.split()[-1])
    return 0.0


def _bulky(name: str) -> dict[str, Any]:
    """A patch of a few KiB, so that buffers fill with a few thousand events."""
    return rsp(name, attributes={f"example.com/a{i}": {"string": "x" * 60} for i in range(30)})


def _stalled_watch(server: ServerProcess, resource_version: str) -> ssl.SSLSocket:
    """A watch over a raw socket with a small receive buffer, whose reader never reads."""
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(60)
    raw.connect(("127.0.0.1", server.port))
    sock = server.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1")
    sock.sendall(
        f"GET {RSP_PATH}?watch=true&resourceVersion={resource_version}&timeoutSeconds=600"
        f" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {server.token}\r\n\r\n".encode()
    )
    return sock


def _reset_or_ended(sock: ssl.SSLSocket) -> bool:
    """Reads what the socket has; True once the server has reset or ended the stream."""
    try:
        while True:
            if not sock.recv(1 << 20):
                return True
    except (ssl.SSLWantReadError, BlockingIOError):
        return False
    except (ssl.SSLError, ConnectionError):
        return True


def _hung_up(sock: ssl.SSLSocket) -> bool:
    """Whether the peer reset or closed the connection, seen without reading from it."""
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLERR | select.POLLHUP | select.POLLRDHUP)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


@dataclass
class ReadingWatch:
    """A watch that reads every event, until it sees ``last``'s priority at ``until``."""

    server: ServerProcess
    resource_version: str
    events: int = 0
    done: threading.Event = field(default_factory=threading.Event)
    error: str = ""
    until: int = -1

    def run(self) -> None:
        params = {
            "watch": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": "600",
        }
        try:
            with (
                self.server.client(timeout=600.0) as client,
                client.stream("GET", RSP_PATH, params=params) as response,
            ):
                for line in response.iter_lines():
                    if not line.strip():
                        continue
                    event = orjson.loads(line)
                    self.events += 1
                    if event["object"]["spec"]["devices"]["priority"] == self.until:
                        self.done.set()
                        return
        except httpx.HTTPError as exc:
            self.error = repr(exc)
        self.done.set()


def test_a_watcher_that_stops_reading_is_cut_off_and_counted(stall_server: ServerProcess) -> None:
    server = stall_server
    with server.client() as client:
        names = [unique("stall") for _ in range(10)]
        for name in names:
            assert client.post(RSP_PATH, json=_bulky(name)).status_code == 201
        rv = client.get(RSP_PATH).json()["metadata"]["resourceVersion"]
        before = _terminated(client)
        stalled = _stalled_watch(server, rv)
        reader = ReadingWatch(server, rv)
        thread = threading.Thread(target=reader.run, daemon=True)
        thread.start()
        try:
            writes = 0
            while _terminated(client) == before and writes < MAX_WRITES:
                for _ in range(100):
                    name = names[writes % len(names)]
                    patch = {"spec": {"devices": {"priority": writes % 1000}}}
                    response = client.patch(
                        f"{RSP_PATH}/{name}",
                        content=orjson.dumps(patch),
                        headers={"Content-Type": "application/merge-patch+json"},
                    )
                    assert response.status_code == 200, response.text
                    writes += 1
            assert _terminated(client) == before + 1, f"not cut after {writes} events"
            # Its connection is dropped at once (it was blocked writing to this reader).
            stalled.setblocking(False)
            wait_for(lambda: _reset_or_ended(stalled), "the stalled watch's connection to end")
            # Watchers that read are not cut: this one gets an event written after the cut.
            reader.until = 1000
            last = {"spec": {"devices": {"priority": 1000}}}
            response = client.patch(
                f"{RSP_PATH}/{names[0]}",
                content=orjson.dumps(last),
                headers={"Content-Type": "application/merge-patch+json"},
            )
            assert response.status_code == 200
            assert reader.done.wait(120)
            assert reader.error == ""
            assert reader.events >= writes
            assert _terminated(client) == before + 1
        finally:
            stalled.close()
            thread.join(timeout=10)
    log = server.log.read_text()
    assert (
        "Forcing resourceslicepatches.resource.k8s.io watcher close due to unresponsiveness" in log
    )


UNREAD_OBJECTS = 1_800
"""About 6 MiB of initial events: more than the kernel buffers of a loopback connection
(4 MiB at most) and the transport's, so that the server's writes stall."""


CREATORS = 8
"""Connections that create them at once: few enough that each request's head reaches this
module's server within its 3 s header deadline on a busy machine (a connection the server
must accept, handshake and read among fifty others can miss it and be dropped)."""


async def _create_bulky(server: ServerProcess, count: int) -> None:
    limits = httpx.Limits(max_connections=CREATORS, max_keepalive_connections=CREATORS)
    async with server.async_client(limits=limits) as client:
        for start in range(0, count, CREATORS):
            answers = await asyncio.gather(
                *(
                    client.post(RSP_PATH, json=_bulky(unique("unread")))
                    for _ in range(min(CREATORS, count - start))
                )
            )
            assert all(a.status_code == 201 for a in answers)


def test_a_client_that_reads_nothing_of_a_response_is_reset(timed_server: ServerProcess) -> None:
    """A watch whose initial events (a few MiB) the client never reads: its writes stall,
    and past the write-stall timeout its connection is reset; the watch cache had no reason
    to cut it (it fell behind no live events), so no watcher is counted."""
    server = timed_server
    asyncio.run(_create_bulky(server, UNREAD_OBJECTS))
    with server.client() as client:
        before = _terminated(client)
        started = time.monotonic()
        sock = _stalled_watch(server, "0")
        try:
            # Watched without reading a byte: reading would unstall the writes.
            wait_for(lambda: _hung_up(sock), "the unread watch's connection to be reset")
            assert time.monotonic() - started >= WRITE_STALL_TIMEOUT
        finally:
            sock.close()
        assert client.get("/version").status_code == 200
        assert _terminated(client) == before
    assert "it read nothing of its response for 3 s" in server.log.read_text()

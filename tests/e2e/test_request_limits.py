"""Limits on the request head, enforced as it is read, before authentication or routing.

A header block over 1 MiB is refused with 431 and a request target over 64 KiB with 414,
both as a ``Status``; the server's memory stays bounded while clients send huge headers,
and authenticated requests keep being answered.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest

from .harness import ServerProcess, start_server

MIB = 1024 * 1024
FLOODS = 8
FLOOD_BYTES = 64 * MIB


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server of this module's own, so its memory can be measured."""
    proc = start_server(tmp_path_factory.mktemp("limits"))
    yield proc
    proc.stop()


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def connect(server: ServerProcess) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=60)
    return server.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1")


def read_response(sock: ssl.SSLSocket, data: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """The status code, headers and body of one response (the body up to its length);
    ``data``: what was already read of it."""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    code = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return code, headers, body


@dataclass
class Flood:
    """One connection sending a request whose one header is ``FLOOD_BYTES`` long."""

    server: ServerProcess
    sent: int = 0
    started: threading.Event = field(default_factory=threading.Event)
    response: tuple[int, dict[str, str], bytes] | None = None
    error: str = ""

    def run(self) -> None:
        try:
            sock = connect(self.server)
            sock.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\nX-Flood: ")
            chunk = b"a" * 65536
            early = b""
            while self.sent < FLOOD_BYTES and not early:
                # Read the answer as soon as there is one: a refused head is answered
                # while the client is still sending it.
                early = self.answer_so_far(sock)
                if not early:
                    sock.sendall(chunk)
                    self.sent += len(chunk)
                if self.sent >= MIB // 2:
                    self.started.set()
            self.started.set()
            self.response = read_response(sock, early)
            sock.close()
        except (OSError, ValueError, IndexError) as exc:
            self.error = repr(exc)
            self.started.set()

    @staticmethod
    def answer_so_far(sock: ssl.SSLSocket) -> bytes:
        """Response bytes already there, without waiting (TLS session tickets make the
        socket readable with no response data)."""
        if not (sock.pending() or select.select([sock], [], [], 0)[0]):
            return b""
        sock.setblocking(False)
        try:
            return sock.recv(65536)
        except ssl.SSLWantReadError:
            return b""
        finally:
            sock.settimeout(60)


def test_huge_headers_are_refused_with_431_while_others_are_served(
    own_server: ServerProcess,
) -> None:
    pid = own_server.process.proc.pid if own_server.process.proc else 0
    with own_server.client() as client:
        assert client.get("/apis/resource.k8s.io/v1alpha3/resourceslicepatches").status_code == 200
        before = rss_bytes(pid)
        floods = [Flood(own_server) for _ in range(FLOODS)]
        threads = [threading.Thread(target=f.run, daemon=True) for f in floods]
        for thread in threads:
            thread.start()
        for flood in floods:  # every flood is under way (or already answered)
            assert flood.started.wait(120)
        # An authenticated request is answered while the floods are being refused.
        resp = client.get("/apis/resource.k8s.io/v1alpha3/resourceslicepatches")
        assert resp.status_code == 200, resp.text
        for thread in threads:
            thread.join(120)
        peak = rss_bytes(pid)

    for flood in floods:
        assert flood.response is not None, flood.error
        code, headers, body = flood.response
        assert code == 431
        assert headers["content-type"] == "application/json"
        status = orjson.loads(body)
        assert (status["kind"], status["code"], status["status"]) == ("Status", 431, "Failure")
        # Refused long before the whole header was sent; what the loopback's socket buffers
        # take in before the refusal is read grows with the machine's load (9 MiB seen).
        assert flood.sent < FLOOD_BYTES // 4
    # Eight 64 MiB headers would need half a gigabyte; the cap keeps growth to a few MiB.
    assert peak - before < 64 * MIB, (before, peak)


def test_a_long_request_target_is_refused_with_414_status(own_server: ServerProcess) -> None:
    sock = connect(own_server)
    sock.sendall(b"GET /apis/" + b"a" * (128 * 1024) + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    code, headers, body = read_response(sock)
    sock.close()
    assert code == 414
    assert headers["content-type"] == "application/json"
    status = orjson.loads(body)
    assert (status["kind"], status["code"]) == ("Status", 414)
    assert len(body) < 4096


def test_a_malformed_request_gets_a_status(own_server: ServerProcess) -> None:
    sock = connect(own_server)
    sock.sendall(b"GET / HTTP/1.1\r\nHost x\r\n\r\n")  # a header line without a colon
    code, headers, body = read_response(sock)
    sock.close()
    assert code == 400
    assert headers["content-type"] == "application/json"
    assert orjson.loads(body)["kind"] == "Status"


def test_a_head_just_under_the_limit_is_served(own_server: ServerProcess) -> None:
    with own_server.client() as client:
        resp = client.get("/version", headers={"X-Padding": "p" * (MIB - 64 * 1024)})
    assert resp.status_code == 200

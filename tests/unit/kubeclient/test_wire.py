"""The wire a client's calls go over: kept-alive connections reused and dropped, answers
framed every way HTTP/1.1 allows (a length, chunks, the connection's close), interim
answers skipped, calls in flight at once answered each their own, and a call that times
out closing its connection. Against loopback servers written to behave in one exact way."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import orjson
import pytest
import uvloop

from apiserver.kubeclient import JSON, APIError, ClusterConfig, KubeClient
from apiserver.kubeclient.wire import Closed, Wire
from apiserver.server.certs import cert_pem, issue_serving_cert, key_pem, make_ca
from tests.unit.kubeclient.loopback import answer_json

Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def _server(serve: Serve) -> AsyncIterator[str]:
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


async def _request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    """The request line, the headers (names lowercased) and the body of one request."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:])}
    body = await reader.readexactly(int(headers.get("content-length") or 0))
    return head[0], headers, body


class Echo:
    """Answers every request with what it saw: the request line, the headers, the body
    and the number of the connection it came on."""

    def __init__(self) -> None:
        self.connections = 0

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        connection = self.connections
        try:
            while True:
                line, headers, body = await _request(reader)
                said = {"line": line, "headers": headers, "body": body.decode(), "on": connection}
                await answer_json(writer, orjson.dumps(said))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def _client(url: str, *, timeout: float = 10.0) -> KubeClient:
    return KubeClient(ClusterConfig(url, None, "t0k", None, None), timeout=timeout)


async def test_calls_reuse_one_kept_alive_connection_and_send_what_they_are_given() -> None:
    echo = Echo()
    async with _server(echo) as url, _client(url) as client:
        got = await client.get("/api/v1/pods", labelSelector="a in (b, c)")
        made = await client.create("/api/v1/namespaces/x/pods", {"kind": "Pod"})
        again = await client.get("/api/v1/pods")
    assert got["line"] == "GET /api/v1/pods?labelSelector=a%20in%20%28b%2C%20c%29 HTTP/1.1"
    assert (got["headers"]["host"], got["headers"]["authorization"]) == (
        url.removeprefix("http://"),
        "Bearer t0k",
    )
    assert made["line"] == "POST /api/v1/namespaces/x/pods HTTP/1.1"
    assert (made["headers"]["content-type"], made["body"]) == ("application/json", '{"kind":"Pod"}')
    assert [got["on"], made["on"], again["on"]] == [1, 1, 1]
    assert echo.connections == 1


def test_calls_go_over_uvloop_transports_too() -> None:
    """The shim and the server run on uvloop, whose transports are its own classes."""

    async def calls() -> list[JSON]:
        echo = Echo()
        async with _server(echo) as url, _client(url) as client:
            return [await client.get(f"/api/v1/pods/p{i}") for i in range(3)]

    answers = uvloop.run(calls())
    assert [(a["line"], a["on"]) for a in answers] == [
        (f"GET /api/v1/pods/p{i} HTTP/1.1", 1) for i in range(3)
    ]


async def test_a_target_that_is_not_visible_ascii_is_escaped() -> None:
    async with _server(Echo()) as url, _client(url) as client:
        got = await client.get("/api/v1/namespaces/x/pods/a b\r\nX-Injected: 1")
    assert got["line"] == "GET /api/v1/namespaces/x/pods/a%20b%0D%0AX-Injected:%201 HTTP/1.1"
    assert "x-injected" not in got["headers"]


async def test_calls_in_flight_at_once_get_their_own_answers_on_their_own_connections() -> None:
    echo = Echo()
    async with _server(echo) as url, _client(url) as client:
        answers = await asyncio.gather(*(client.get(f"/api/v1/pods/p{i}") for i in range(20)))
    assert [a["line"] for a in answers] == [f"GET /api/v1/pods/p{i} HTTP/1.1" for i in range(20)]
    assert echo.connections > 1


async def test_a_chunked_answer_is_read_whole() -> None:
    async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        body = orjson.dumps({"kind": "Pod", "spec": {"blob": "x" * 10_000}})
        chunks = [body[i : i + 777] for i in range(0, len(body), 777)]
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for chunk in chunks:
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async with _server(chunked) as url, _client(url) as client:
        got = await client.get("/api/v1/pods/p")
    assert got["spec"]["blob"] == "x" * 10_000


async def test_an_answer_that_ends_with_its_connection_is_read_whole_and_not_reused() -> None:
    served = 0

    async def until_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        served += 1
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b'{"kind":"Pod"}')
        await writer.drain()
        writer.close()

    async with _server(until_close) as url, _client(url) as client:
        assert await client.get("/api/v1/pods/p") == {"kind": "Pod"}
        assert await client.get("/api/v1/pods/p") == {"kind": "Pod"}
    assert served == 2


async def test_an_interim_answer_is_skipped_for_the_final_one() -> None:
    async def interim(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n")
        await answer_json(writer)

    async with _server(interim) as url, _client(url) as client:
        assert await client.get("/api/v1/pods/p") == {"kind": "Pod"}


async def test_a_status_answer_raises_its_error_and_keeps_the_connection() -> None:
    connections = 0

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        status = {"kind": "Status", "code": 404, "reason": "NotFound", "message": "gone"}
        body = orjson.dumps(status)
        for _ in range(2):
            await _request(reader)
            writer.write(f"HTTP/1.1 404 Not Found\r\nContent-Length: {len(body)}\r\n\r\n".encode())
            writer.write(body)
            await writer.drain()

    async with _server(refuse) as url, _client(url) as client:
        for _ in range(2):
            with pytest.raises(APIError) as raised:
                await client.get("/api/v1/pods/p")
            assert (raised.value.code, raised.value.reason) == (404, "NotFound")
    assert connections == 1


async def test_what_is_not_http_fails_the_call_with_code_0() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"SSH-2.0-OpenSSH\r\n\r\n")
        await writer.drain()

    async with _server(garbage) as url, _client(url) as client:
        with pytest.raises(APIError) as raised:
            await client.get("/api/v1/pods/p")
    assert raised.value.code == 0


async def test_an_answer_cut_short_fails_the_call() -> None:
    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")
        await writer.drain()
        writer.close()

    async with _server(cut) as url, _client(url) as client:
        with pytest.raises(APIError) as raised:
            await client.get("/api/v1/pods/p")
    assert raised.value.code == 0


async def test_a_call_that_times_out_closes_its_connection() -> None:
    connections: list[int] = []
    closed_by_client = asyncio.Event()

    async def slow_first(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections) + 1)
        number = len(connections)
        try:
            await _request(reader)
            if number == 1:
                # No answer: the client's timeout passes, and it closes the connection.
                await reader.read()
                closed_by_client.set()
                return
            await answer_json(writer, orjson.dumps({"on": number}))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass

    async with _server(slow_first) as url, _client(url, timeout=0.2) as client:
        with pytest.raises(APIError) as raised:
            await client.get("/api/v1/pods/p")
        assert raised.value.code == 0
        await asyncio.wait_for(closed_by_client.wait(), 5)
        assert await client.get("/api/v1/pods/p") == {"on": 2}


async def test_a_reused_connection_closed_before_any_answer_byte_raises_closed() -> None:
    async def one_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        await answer_json(writer)
        await _request(reader)
        writer.close()

    async with _server(one_answer) as url:
        wire = Wire(url, None)
        try:
            assert (await wire.call("GET", "/p", "", None)).status_code == 200
            with pytest.raises(Closed):
                await wire.call("POST", "/p", "", b"{}")
        finally:
            await wire.aclose()


@pytest.mark.parametrize(
    ("server_name", "answered"),
    [("kube.internal", True), (None, False)],
    ids=["tls-server-name", "the-url-host"],
)
async def test_tls_verifies_the_server_by_the_name_asked_for(
    tmp_path: Path, server_name: str | None, answered: bool
) -> None:
    """The server's certificate names kube.internal, not the address dialled: a client
    whose configuration names kube.internal (``tls-server-name``) reaches it; one that
    checks the URL's host refuses it."""
    ca, ca_key = make_ca("test-ca")
    cert, key = issue_serving_cert(ca, ca_key, "kube.internal", ["kube.internal"])
    (tmp_path / "tls.crt").write_bytes(cert_pem(cert))
    (tmp_path / "tls.key").write_bytes(key_pem(key))
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    server = await asyncio.start_server(Echo(), "127.0.0.1", 0, ssl=serving)
    port = server.sockets[0].getsockname()[1]
    config = ClusterConfig(
        f"https://127.0.0.1:{port}", cert_pem(ca), "t0k", tls_server_name=server_name
    )
    try:
        async with KubeClient(config, timeout=10) as client:
            if answered:
                got = await client.get("/api/v1/pods/p")
                assert got["line"] == "GET /api/v1/pods/p HTTP/1.1"
            else:
                with pytest.raises(APIError) as raised:
                    await client.get("/api/v1/pods/p")
                assert raised.value.code == 0
    finally:
        server.close()
        await server.wait_closed()

"""The shim's API client: a read, or an update (its resourceVersion makes a replay safe),
whose kept-alive connection the server closed as it went out is sent once more; a create
never is. Through an in-process transport (the client's own replay) and over a real socket
(the network transport's)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from apiserver.kubeclient import APIError, ClusterConfig, KubeClient
from tests.unit.kubeclient.loopback import answer_json


def _client(handler: httpx.MockTransport) -> KubeClient:
    return KubeClient(ClusterConfig("http://api", None, "t", None, None), transport=handler)


def _closing_once() -> tuple[httpx.MockTransport, list[str]]:
    calls: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        if len(calls) == 1:
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
        return httpx.Response(200, json={"kind": "Pod"})

    return httpx.MockTransport(handle), calls


async def test_a_read_on_a_connection_the_server_closed_is_sent_again() -> None:
    transport, calls = _closing_once()
    client = _client(transport)
    assert await client.get("/api/v1/namespaces/default/pods/p") == {"kind": "Pod"}
    assert calls == ["GET", "GET"]
    await client.aclose()


async def test_an_update_on_a_connection_the_server_closed_is_sent_again() -> None:
    transport, calls = _closing_once()
    client = _client(transport)
    body = {"kind": "Pod", "metadata": {"resourceVersion": "7"}}
    assert await client.update("/api/v1/namespaces/default/pods/p", body) == {"kind": "Pod"}
    assert calls == ["PUT", "PUT"]
    await client.aclose()


async def test_a_create_is_never_sent_twice() -> None:
    transport, calls = _closing_once()
    client = _client(transport)
    with pytest.raises(APIError) as raised:
        await client.create("/api/v1/namespaces/default/pods", {"kind": "Pod"})
    assert raised.value.code == 0
    assert calls == ["POST"]
    await client.aclose()


class OneRequestPerConnection:
    """A plain HTTP server on loopback that answers the first request of each connection
    and, on a second request over the same kept-alive connection, closes it unanswered:
    the race of a server's idle close with a client reusing the connection, made certain."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []
        """(method, connection number) of every request that arrived."""
        self._connections = 0

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aexit__(self, *_: object) -> None:
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections += 1
        connection, answered = self._connections, False
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                lines = head.decode("latin-1").split("\r\n")
                length = next(
                    (
                        int(v)
                        for k, _, v in (h.partition(":") for h in lines[1:])
                        if k.strip().lower() == "content-length"
                    ),
                    0,
                )
                await reader.readexactly(length)
                self.seen.append((lines[0].split()[0], connection))
                if answered:
                    break  # closed under the request, unanswered
                await answer_json(writer)
                answered = True
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.mark.parametrize("method", ["GET", "PUT"])
async def test_over_the_network_a_read_or_update_on_a_closed_connection_is_sent_again(
    method: str,
) -> None:
    server = OneRequestPerConnection()
    async with server as url, KubeClient(ClusterConfig(url, None, "t", None, None)) as client:
        await client.get("/api/v1/namespaces/default/pods/p")
        body = {"kind": "Pod", "metadata": {"resourceVersion": "7"}}
        call = client.get if method == "GET" else lambda p: client.update(p, body)
        assert await call("/api/v1/namespaces/default/pods/p") == {"kind": "Pod"}
    # The second call met the closed connection and went again on a new one.
    assert server.seen == [("GET", 1), (method, 1), (method, 2)]


async def test_over_the_network_a_create_on_a_closed_connection_is_not_sent_again() -> None:
    server = OneRequestPerConnection()
    async with server as url, KubeClient(ClusterConfig(url, None, "t", None, None)) as client:
        await client.get("/api/v1/namespaces/default/pods/p")
        with pytest.raises(APIError) as raised:
            await client.create("/api/v1/namespaces/default/pods", {"kind": "Pod"})
    assert raised.value.code == 0
    assert server.seen == [("GET", 1), ("POST", 1)]

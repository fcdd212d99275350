"""The shim's API client: a read, or an update (its resourceVersion makes a replay safe),
whose kept-alive connection the server closed as it went out is sent once more; a create
never is."""

from __future__ import annotations

import httpx
import pytest

from apiserver.kubeclient import APIError, ClusterConfig, KubeClient


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

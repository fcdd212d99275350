"""Which transport carries a client's requests: aiohttp's, unless the environment names a
proxy for the server (``HTTPS_PROXY`` and the like, not bypassed by ``NO_PROXY``): then
httpx's own transport through that proxy; and a client through a proxy still reaches the
server through it."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from httpx_aiohttp import AiohttpTransport

from apiserver.kubeclient import ClusterConfig, KubeClient, network
from tests.unit.kubeclient.loopback import answer_json

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_without_a_proxy_requests_go_through_aiohttp() -> None:
    assert isinstance(network("https://kube.example:6443", True), AiohttpTransport)


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "https_proxy", "ALL_PROXY"])
def test_a_proxy_for_the_server_goes_through_httpx_own_transport(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "http://proxy.example:3128")
    assert isinstance(network("https://kube.example:6443", True), httpx.AsyncHTTPTransport)


def test_a_server_the_proxy_is_bypassed_for_goes_through_aiohttp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "kube.example,10.96.0.1")
    assert isinstance(network("https://kube.example:6443", True), AiohttpTransport)
    assert isinstance(network("https://10.96.0.1", True), AiohttpTransport)
    assert isinstance(network("https://elsewhere.example", True), httpx.AsyncHTTPTransport)


async def test_a_client_behind_a_proxy_sends_its_request_to_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        asked.append((await reader.readuntil(b"\r\n")).strip())
        await answer_json(writer, close=True)
        writer.close()

    server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    try:
        async with KubeClient(ClusterConfig("http://kube.example", None, "t", None, None)) as c:
            assert await c.get("/api/v1/namespaces/default/pods/p") == {"kind": "Pod"}
    finally:
        server.close()
        await server.wait_closed()
    assert asked == [b"GET http://kube.example/api/v1/namespaces/default/pods/p HTTP/1.1"]

"""A ``ClusterConfig`` turned into what httpx needs: the TLS context (the CA to trust, the
client certificate to present), the request authentication (a bearer token, re-read
from its file as a projected token rotates; the TLS server name to ask for) and the
transport that carries requests over the network."""

from __future__ import annotations

import ssl
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Generator
from pathlib import Path

import httpx
from httpx_aiohttp import AiohttpTransport

from .config import ClusterConfig

TOKEN_REREAD = 60.0


def ssl_context(config: ClusterConfig) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if config.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif config.ca_pem:
        context = ssl.create_default_context(cadata=config.ca_pem.decode("ascii"))
    if config.cert_pem and config.key_pem:
        # load_cert_chain reads files only; the pair lives in a private temporary directory
        # just long enough to be loaded.
        with tempfile.TemporaryDirectory() as directory:
            cert, key = Path(directory) / "client.crt", Path(directory) / "client.key"
            cert.write_bytes(config.cert_pem)
            key.write_bytes(config.key_pem)
            context.load_cert_chain(cert, key)
    return context


class BearerAuth(httpx.Auth):
    """A fixed token, or a token file re-read every ``TOKEN_REREAD`` seconds; and the TLS
    server name to ask for, when the configuration names one."""

    def __init__(self, config: ClusterConfig) -> None:
        self.token = config.token
        self.token_file = config.token_file
        self.server_name = config.tls_server_name
        self._read_at = -TOKEN_REREAD

    def _current(self) -> str | None:
        if self.token_file is not None and time.monotonic() - self._read_at >= TOKEN_REREAD:
            self.token = self.token_file.read_text().strip()
            self._read_at = time.monotonic()
        return self.token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self._current()
        if token:
            request.headers["Authorization"] = f"Bearer {token}"
        if self.server_name:
            request.extensions["sni_hostname"] = self.server_name
        yield request


def network(url: str, context: ssl.SSLContext | bool) -> httpx.AsyncBaseTransport | None:
    """The transport for requests to ``url``: httpx's requests carried by aiohttp, which
    parses HTTP in C and leaves TLS to asyncio's transport (half the CPU per request of
    httpx's own stack, whose TLS runs in Python through anyio: bench/RESULTS.md "Client
    layer"); aiohttp sends a GET, PUT or DELETE once more when a kept-alive connection was
    closed under it. None (httpx's own stack) when the environment names a proxy for
    ``url``: httpx honours ``HTTPS_PROXY`` and ``NO_PROXY`` only for its own transport.
    ``context``: the TLS context, or whether to verify the server with the system's CAs."""
    if _proxied(url):
        return None
    return AiohttpTransport(verify=context)


def _proxied(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(parts.netloc)

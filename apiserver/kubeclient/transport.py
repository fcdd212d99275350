"""A ``ClusterConfig`` turned into what the client needs: the TLS context (the CA to trust,
the client certificate to present), the request authentication (a bearer token, re-read
from its file as a projected token rotates; the TLS server name to ask for), and what
carries requests over the network: the wire for calls (``wire``), httpx's transport for
streams and for anything through a proxy (``network``)."""

from __future__ import annotations

import ssl
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Generator, MutableMapping
from pathlib import Path
from typing import Any

import httpx
from httpx_aiohttp import AiohttpTransport

from .config import ClusterConfig
from .wire import Wire

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

    def authorization(self) -> str | None:
        """The ``Authorization`` header's value, None without a token."""
        token = self._current()
        if not token:
            return None
        if "\r" in token or "\n" in token:
            raise ValueError("the bearer token holds a line break")
        return f"Bearer {token}"

    def apply(
        self, headers: MutableMapping[str, str], extensions: MutableMapping[str, Any]
    ) -> None:
        """Put the token in ``headers`` and the server name in ``extensions``."""
        authorization = self.authorization()
        if authorization:
            headers["Authorization"] = authorization
        if self.server_name:
            extensions["sni_hostname"] = self.server_name

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        self.apply(request.headers, request.extensions)
        yield request


def network(url: str, context: ssl.SSLContext | bool) -> httpx.AsyncBaseTransport:
    """The transport for requests to ``url``: httpx's requests carried by aiohttp, which
    parses HTTP in C and leaves TLS to asyncio's transport (half the CPU per request of
    httpx's own stack, whose TLS runs in Python through anyio: bench/RESULTS.md "Client
    layer"); aiohttp sends a GET, PUT or DELETE once more when a kept-alive connection was
    closed under it. When the environment names a proxy for ``url`` (``HTTPS_PROXY`` and
    the like, not bypassed by ``NO_PROXY``), httpx's own transport through that proxy, as
    httpx itself would route the request. ``context``: the TLS context, or whether to
    verify the server with the system's CAs."""
    proxy = _proxy_for(url)
    if proxy:
        return httpx.AsyncHTTPTransport(verify=context, proxy=proxy)
    return AiohttpTransport(verify=context)


def wire(url: str, context: ssl.SSLContext, server_name: str | None, timeout: float) -> Wire | None:
    """Kept-alive connections for the calls to ``url`` whose answers are read whole, or
    None when the environment names a proxy for it (``network`` then carries them too).
    ``server_name``: the TLS server name to ask for, when not the URL's host."""
    if _proxy_for(url):
        return None
    return Wire(url, context, server_name=server_name, timeout=timeout)


def _proxy_for(url: str) -> str | None:
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.netloc):
        return None
    return proxy

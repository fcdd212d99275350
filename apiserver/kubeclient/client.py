"""One HTTPS client of a Kubernetes API server: JSON calls that raise typed ``Status``
errors, lists read page by page, and watches decoded from NDJSON.

A JSON call goes over the wire (``wire``: kept-alive HTTP/1.1 connections, the answer
parsed by httptools); a watch goes through httpx's client and aiohttp's transport
(``transport.network``). Given a transport of its own (an in-process app), or behind a
proxy, every request goes through httpx's client, a call handed straight to the transport:
the client around it (URL merging, the auth flow, redirects, cookies) costs more CPU than
the exchange, and a call needs none of it. Answers come uncompressed (no
``Accept-Encoding``): this client talks to API servers a hop away, where compressing costs
more than it saves.

A GET, PUT or DELETE whose kept-alive connection the server closed as it went out is sent
once more (idempotent: a PUT carries its resourceVersion); a create or a patch never is.
Objects stay raw JSON, so fields this code does not know survive a read and a write.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from ..toolkit import JSON, MERGE_PATCH
from .config import ClusterConfig
from .errors import APIError, Gone, connection_failed, error_of
from .ndjson import objects
from .transport import BearerAuth, network, ssl_context, wire
from .wire import Answer, Closed

PAGE_SIZE = 500
REPLAYABLE = frozenset({"GET", "PUT", "DELETE"})
"""Methods sent once more when a kept-alive connection was closed under them."""
KNOWN_URLS = 256
"""Parsed URLs a client keeps (``_url``)."""


@dataclass
class Listing:
    """Every item of a collection, read from one snapshot, and that snapshot's version."""

    items: list[JSON] = field(default_factory=list)
    resource_version: str = ""


class KubeClient:
    def __init__(
        self,
        config: ClusterConfig,
        *,
        timeout: float = 30.0,
        user_agent: str = "dra-apiserver",
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """``transport``: where requests go instead of the network (an in-process app)."""
        self.config = config
        self.timeout = timeout
        context = ssl_context(config)
        self._auth = BearerAuth(config)
        self._headers = {"Accept": "application/json", "User-Agent": user_agent}
        self._transport = transport if transport is not None else network(config.server, context)
        self._wire = (
            wire(config.server, context, self._auth.server_name, timeout)
            if transport is None
            else None
        )
        """Where calls go, unless a transport was given or a proxy applies: then through
        httpx's client and the transport."""
        self._head = "".join(f"{name}: {value}\r\n" for name, value in self._headers.items())
        self._base = config.server.rstrip("/")
        self._timeouts = httpx.Timeout(timeout).as_dict()
        self._urls: dict[str, httpx.URL] = {}
        self._http = httpx.AsyncClient(
            base_url=config.server,
            verify=context,
            headers=self._headers,
            auth=self._auth,
            timeout=timeout,
            transport=self._transport,
        )

    @property
    def http(self) -> httpx.AsyncClient:
        """The connection itself, for calls of another shape."""
        return self._http

    async def aclose(self) -> None:
        if self._wire is not None:
            await self._wire.aclose()
        await self._http.aclose()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def _send(
        self, method: str, path: str, body: Any, params: dict[str, str] | None, content_type: str
    ) -> Answer:
        content = orjson.dumps(body) if body is not None else None
        target = path
        if params:
            query = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
            target += ("&" if "?" in path else "?") + query
        try:
            if self._wire is None:
                return await self._send_through_httpx(method, target, content, content_type)
            return await self._send_over_wire(method, target, content, content_type)
        except (httpx.HTTPError, OSError, TimeoutError) as err:
            raise connection_failed(f"{method} {path}", err) from err

    async def _send_over_wire(
        self, method: str, target: str, content: bytes | None, content_type: str
    ) -> Answer:
        assert self._wire is not None
        headers = self._head
        authorization = self._auth.authorization()
        if authorization:
            headers += f"Authorization: {authorization}\r\n"
        if content is not None:
            headers += f"Content-Type: {content_type}\r\n"
        try:
            return await self._wire.call(method, target, headers, content)
        except Closed:
            if method not in REPLAYABLE:
                raise
            # A kept-alive connection the server closed as the request went out (its
            # idle timeout): an idempotent request is safe to send again, once. A PUT
            # carries its resourceVersion, so a replay of one that was applied is a 409.
            return await self._wire.call(method, target, headers, content)

    async def _send_through_httpx(
        self, method: str, target: str, content: bytes | None, content_type: str
    ) -> Answer:
        headers = dict(self._headers)
        extensions: dict[str, Any] = {"timeout": self._timeouts}
        self._auth.apply(headers, extensions)
        if content is not None:
            headers["Content-Type"] = content_type
        parsed = self._url(self._base + target)

        def request() -> httpx.Request:
            return httpx.Request(
                method, parsed, headers=headers, content=content, extensions=extensions
            )

        try:
            answer = await self._exchange(request)
        except httpx.RemoteProtocolError:
            if method not in REPLAYABLE:
                raise
            answer = await self._exchange(request)  # as on the wire (``_send_over_wire``)
        return Answer(answer.status_code, answer.content, len(content or b""))

    def _url(self, url: str) -> httpx.URL:
        """``url`` parsed, once per URL among the last ``KNOWN_URLS``: a caller asks the same
        few again and again (a review, an extender's verbs), and httpx's parse of one cost
        more than the rest of building the request."""
        found = self._urls.get(url)
        if found is None:
            if len(self._urls) >= KNOWN_URLS:
                self._urls.clear()
            found = self._urls[url] = httpx.URL(url)
        return found

    async def _exchange(self, request: Callable[[], httpx.Request]) -> httpx.Response:
        """One request through the transport, its answer read whole."""
        sent = request()
        answer = await self._transport.handle_async_request(sent)
        answer.request = sent
        try:
            await answer.aread()
        finally:
            await answer.aclose()
        return answer

    async def exchange(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Answer:
        """One call, its answer read whole, whatever its status (``json_body`` decodes it).
        Only a failure to get an answer raises (``APIError``, code 0)."""
        return await self._send(method, path, body, params, content_type)

    async def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> JSON:
        answer = await self._send(method, path, body, params, content_type)
        decoded = _decoded(answer.content)
        if answer.is_success:
            if decoded is None and answer.content.strip():
                raise APIError(answer.status_code, "InvalidResponse", "the answer is not JSON")
            return decoded if isinstance(decoded, dict) else {}
        raise error_of(answer.status_code, decoded, answer.text)

    async def get(self, path: str, **params: str) -> JSON:
        return await self._call("GET", path, params=params or None)

    async def create(self, path: str, body: JSON) -> JSON:
        return await self._call("POST", path, body)

    async def update(self, path: str, body: JSON) -> JSON:
        return await self._call("PUT", path, body)

    async def merge_patch(self, path: str, patch: JSON) -> JSON:
        return await self._call("PATCH", path, patch, content_type=MERGE_PATCH)

    async def delete(self, path: str) -> JSON:
        return await self._call("DELETE", path)

    async def list(
        self, path: str, params: dict[str, str] | None = None, *, page_size: int = PAGE_SIZE
    ) -> Listing:
        """Every item, page by page (``limit`` and ``continue``) from one snapshot; a
        continue token that expired between pages starts the list over. Items come with
        their ``apiVersion`` and ``kind`` (a list may leave them out)."""
        listing, token = Listing(), ""
        while True:
            query = {**(params or {}), "limit": str(page_size)}
            if token:
                query["continue"] = token
            try:
                page = await self.get(path, **query)
            except Gone:
                if not token:
                    raise
                listing, token = Listing(), ""  # the snapshot expired: start over
                continue
            meta = page.get("metadata") or {}
            listing.resource_version = listing.resource_version or str(
                meta.get("resourceVersion") or ""
            )
            listing.items.extend(_typed_items(page))
            token = str(meta.get("continue") or "")
            if not token:
                return listing

    async def watch(
        self,
        path: str,
        params: dict[str, str] | None = None,
        *,
        resource_version: str = "",
        timeout_seconds: int | None = None,
    ) -> AsyncGenerator[JSON, None]:
        """The events of one watch (bookmarks asked for), until the server ends it. An
        ``ERROR`` event raises its ``Status`` (``Gone`` for 410), as a failed answer does."""
        query = {**(params or {}), "watch": "true", "allowWatchBookmarks": "true"}
        if resource_version:
            query["resourceVersion"] = resource_version
        read = None
        if timeout_seconds is not None:
            query["timeoutSeconds"] = str(timeout_seconds)
            read = timeout_seconds + self.timeout
        limits = httpx.Timeout(self.timeout, read=read)
        try:
            async with self._http.stream("GET", path, params=query, timeout=limits) as answer:
                if not answer.is_success:
                    await answer.aread()
                    raise error_of(answer.status_code, _decoded(answer.content), answer.text)
                async for event in objects(answer.aiter_bytes()):
                    if not isinstance(event, dict):
                        continue
                    if event.get("type") == "ERROR":
                        raise error_of(500, event.get("object"), repr(event.get("object")))
                    yield event
        except httpx.HTTPError as err:
            raise connection_failed(f"watch {path}", err) from err
        except orjson.JSONDecodeError as err:
            raise APIError(500, "InvalidResponse", f"watch {path}: a line is not JSON") from err


def json_body(answer: Answer) -> Any:
    """An answer's decoded JSON body; None when it has none or it is not JSON."""
    return _decoded(answer.content)


def _decoded(content: bytes) -> Any:
    if not content:
        return None
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return None


def _typed_items(page: JSON) -> list[JSON]:
    kind = str(page.get("kind") or "").removesuffix("List")
    api_version = page.get("apiVersion")
    items = [item for item in page.get("items") or () if isinstance(item, dict)]
    for item in items:
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", kind)
    return items

"""The ASGI application: routes, middleware and lifecycle, assembled from the layers below.

Every route answers with Kubernetes shapes (a ``Status`` for every error) and none
redirects: FastAPI's trailing-slash redirects and its own docs and error bodies are off,
because the aggregator turns any 3xx into a 502 and clients expect ``Status`` objects.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import platform
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from fastapi import FastAPI
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..auth import Authenticator, AuthMiddleware, Authorizer
from ..machinery import (
    MAX_BODY_BYTES,
    OPENAPI_V2_PROTOBUF,
    V2_CONTENT_TYPE,
    ActionEntry,
    Discovery,
    Resource,
    ResourceHandler,
    ServedKind,
    errors,
    json_response,
    status_response,
    v2_document,
    v3_document,
    wants_aggregated,
)
from ..machinery import discovery_etag as etag
from ..machinery import encode_openapi as encode
from ..machinery import encode_openapi_v2_protobuf as encode_document
from ..storage import Store
from ..storage.terminations import TERMINATED
from ..toolkit.options import non_negative, option, positive
from .accesslog import AccessLogMiddleware

log = logging.getLogger("apiserver")


@dataclass
class ServerSettings:
    """What the app needs that is not a kind: limits and timings."""

    max_body_bytes: int = option(
        "--max-request-body-bytes",
        MAX_BODY_BYTES,
        "the largest request body accepted; a larger one is answered 413",
        check=positive,
    )
    min_request_timeout: float = option(
        "--min-request-timeout", 1800.0, "default watch timeout in seconds", check=non_negative
    )
    bookmark_interval: float = option(
        "--bookmark-interval", 60.0, "seconds between watch bookmarks", check=positive
    )
    kubernetes_version: tuple[str, str] = ("1", "36")
    extra: dict[str, Any] = field(default_factory=dict)


class Service(Protocol):
    """Something that runs beside the server: started after the store, closed before it,
    and named checks for ``/readyz`` (each true once that part can serve)."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def readiness(self) -> dict[str, bool]: ...


class APIServer:
    """The served resources over one store, and the documents that describe them."""

    def __init__(
        self,
        store: Store,
        served: Sequence[Resource],
        settings: ServerSettings,
        *,
        services: Sequence[Service] = (),
        metrics: CollectorRegistry | None = None,
    ) -> None:
        """``served``: every resource and subresource (``cluster.serve_kinds``);
        ``services``: what runs beside the server (sources, views, controllers);
        ``metrics``: the Prometheus registry /metrics serves, where services register theirs."""
        self.store = store
        self.settings = settings
        self.services = list(services)
        self.metrics = metrics if metrics is not None else CollectorRegistry()
        self.served = list(served)
        self.handler = ResourceHandler(
            {
                (r.resource.group, r.resource.version, r.resource.plural, r.subresource): r
                for r in served
            },
            max_body_bytes=settings.max_body_bytes,
            min_request_timeout=settings.min_request_timeout,
            bookmark_interval=settings.bookmark_interval,
        )
        kinds = [r.strategy for r in served if not r.subresource]
        self.discovery = Discovery(
            ((s.resource, s.has_status) for s in kinds),
            (
                ActionEntry(s.resource, a.subresource, a.group_version, a.kind)
                for s in kinds
                for a in s.actions
            ),
        )
        documented = [
            ServedKind(s.resource, s.model, s.has_status, s.create_rate_limited) for s in kinds
        ]
        self.openapi_v2 = encode(v2_document(documented, "DRA extension API server"))
        self.openapi_v3: dict[str, tuple[bytes, str]] = {}
        by_gv: dict[str, list[ServedKind]] = {}
        for kind in documented:
            prefix = f"apis/{kind.resource.group}" if kind.resource.group else "api"
            by_gv.setdefault(f"{prefix}/{kind.resource.version}", []).append(kind)
        for key, group_kinds in by_gv.items():
            self.openapi_v3[key] = encode(v3_document(group_kinds, "DRA extension API server"))
        self.openapi_v3_root = orjson.dumps(
            {
                "paths": {
                    key: {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
                    for key, (_, digest) in sorted(self.openapi_v3.items())
                }
            }
        )
        self.ready = False

    @functools.cached_property
    def openapi_v2_protobuf(self) -> tuple[bytes, str]:
        """The v2 document in gnostic's protobuf and its hash, made from the JSON form on
        first request: only kubectl asks, and only for some commands."""
        body = encode_document(orjson.loads(self.openapi_v2[0]))
        return body, hashlib.sha512(body).hexdigest().upper()


def build_app(
    server: APIServer,
    authenticator: Authenticator | None,
    authorizer: Authorizer | None = None,
    *,
    access_log: bool = False,
) -> ASGIApp:
    """The server as one ASGI app: metrics, the access log when asked for, then
    authentication and authorization, then the resource routes, and FastAPI for everything
    else (discovery, OpenAPI, health, metrics)."""
    metrics = _Metrics(server.metrics)
    app = FastAPI(
        lifespan=_lifespan(server),
        redirect_slashes=False,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        title="DRA extension API server",
        # Our own /metrics serves Prometheus; FastAPI's OpenTelemetry hooks would only add
        # a check per request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.router.redirect_slashes = False
    for path, endpoint in _Endpoints(server, metrics).routes():
        app.add_route(path, endpoint, ["GET"])
    _answer_errors_with_status(app)
    routes = _ResourceRoutes(server, app)
    authorized: ASGIApp = AuthMiddleware(routes, authenticator, authorizer)
    if access_log:
        authorized = AccessLogMiddleware(authorized)
    return _MetricsMiddleware(authorized, metrics)


def _lifespan(server: APIServer) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The store started first and closed last; the services started in order, closed in
    reverse; ready in between."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await server.store.start()
        for service in server.services:
            await service.start()
        server.ready = True
        try:
            yield
        finally:
            server.ready = False
            for service in reversed(server.services):
                await service.close()
            await server.store.close()

    return lifespan


def _answer_errors_with_status(app: FastAPI) -> None:
    """Every error FastAPI or Starlette would answer on its own, as a ``Status``."""

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 405:
            return status_response(
                errors.StatusError(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                    headers=dict(exc.headers or {}),  # Starlette's Allow
                )
            )
        if exc.status_code == 404:
            return _not_found()
        return status_response(errors.StatusError(exc.status_code, "Unknown", str(exc.detail)))

    @app.exception_handler(errors.StatusError)
    async def status_error(_request: Request, exc: errors.StatusError) -> Response:
        return status_response(exc)

    @app.exception_handler(Exception)
    async def internal_error(_request: Request, exc: Exception) -> Response:
        return status_response(errors.internal(f"{type(exc).__name__}: {exc}"))


class _Endpoints:
    """What is not a resource: health, version, metrics, discovery and OpenAPI."""

    def __init__(self, server: APIServer, metrics: _Metrics) -> None:
        self.server = server
        self.metrics = metrics

    def routes(self) -> list[tuple[str, Callable[[Request], Awaitable[Response]]]]:
        return [
            ("/healthz", self.healthz),
            ("/livez", self.healthz),
            ("/readyz", self.readyz),
            ("/version", self.version),
            ("/version/", self.version),  # what client-go and the typed clients ask
            ("/metrics", self.metrics_text),
            ("/openapi/v2", self.openapi_v2),
            ("/openapi/v3", self.openapi_v3_root),
            ("/openapi/v3/{path:path}", self.openapi_v3_doc),
            ("/api", self.api_root),
            ("/api/{version}", self.core_version),
            ("/apis", self.apis_root),
            ("/apis/{group}", self.api_group),
            ("/apis/{group}/{version}", self.api_group_version),
        ]

    async def healthz(self, _request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(self, request: Request) -> Response:
        server = self.server
        if not server.ready:
            return PlainTextResponse("[-]store not ready\nreadyz check failed", status_code=503)
        # The store's own checks (its backend reachable, its watch caches synced) and the
        # services' (sources synced, the device view built).
        checks = dict(server.store.readiness())
        for service in server.services:
            checks.update(service.readiness())
        ready = all(checks.values())
        if ready and "verbose" not in request.query_params:
            return PlainTextResponse("ok")
        lines = [f"[+]{name} ok" if ok else f"[-]{name} failed" for name, ok in checks.items()]
        lines.append("readyz check passed" if ready else "readyz check failed")
        return PlainTextResponse("\n".join(lines), status_code=200 if ready else 503)

    async def version(self, _request: Request) -> Response:
        major, minor = self.server.settings.kubernetes_version
        return json_response(
            orjson.dumps(
                {
                    "major": major,
                    "minor": minor,
                    "gitVersion": f"v{major}.{minor}.0-dra-extension.{__version__}",
                    "gitCommit": "",
                    "gitTreeState": "",
                    "buildDate": "",
                    "goVersion": f"python{platform.python_version()}",
                    "compiler": "cpython",
                    "platform": f"{platform.system().lower()}/{platform.machine()}",
                }
            )
        )

    async def metrics_text(self, _request: Request) -> Response:
        return Response(generate_latest(self.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def api_root(self, request: Request) -> Response:
        if wants_aggregated(request.headers.get("accept")):
            return _aggregated(request, self.server.discovery.aggregated_core)
        return json_response(self.server.discovery.api_versions)

    async def apis_root(self, request: Request) -> Response:
        if wants_aggregated(request.headers.get("accept")):
            return _aggregated(request, self.server.discovery.aggregated_apis)
        return json_response(self.server.discovery.api_group_list)

    async def api_group(self, request: Request) -> Response:
        body = self.server.discovery.group(request.path_params["group"])
        return json_response(body) if body is not None else _not_found()

    async def api_group_version(self, request: Request) -> Response:
        body = self.server.discovery.resource_list(
            request.path_params["group"], request.path_params["version"]
        )
        return json_response(body) if body is not None else _not_found()

    async def core_version(self, request: Request) -> Response:
        body = self.server.discovery.resource_list("", request.path_params["version"])
        return json_response(body) if body is not None else _not_found()

    async def openapi_v2(self, request: Request) -> Response:
        # kubectl asks for the protobuf encoding only; other clients for JSON.
        accept = request.headers.get("accept", "")
        if any(media_type in accept for media_type in OPENAPI_V2_PROTOBUF):
            body, digest = self.server.openapi_v2_protobuf
            return _cached(request, body, digest, OPENAPI_V2_PROTOBUF[0])
        if accept and "json" not in accept and "*/*" not in accept:
            return status_response(
                errors.not_acceptable(
                    f"/openapi/v2 is served as application/json or {OPENAPI_V2_PROTOBUF[0]}"
                )
            )
        body, digest = self.server.openapi_v2
        return _cached(request, body, digest)

    async def openapi_v3_root(self, _request: Request) -> Response:
        return json_response(self.server.openapi_v3_root)

    async def openapi_v3_doc(self, request: Request) -> Response:
        doc = self.server.openapi_v3.get(request.path_params["path"])
        if doc is None:
            return _not_found()
        body, digest = doc
        response = _cached(request, body, digest)
        if request.query_params.get("hash") == digest:
            # Never redirect on a stale hash (the aggregator would turn it into a 502).
            response.headers["Cache-Control"] = "public, immutable"
            response.headers["Expires"] = "Thu, 31 Dec 2099 23:59:59 GMT"
        return response


class _ResourceRoutes:
    """Resource requests go straight to the handler; everything else to the FastAPI app.

    Resource requests are nearly all the traffic, and FastAPI's and Starlette's middleware
    and routing cost more than the request itself (the profile is in bench/RESULTS.md). The
    handler answers every failure it knows as a ``Status``; anything else becomes a 500
    ``Status`` here, as FastAPI's exception handler would make it.
    """

    def __init__(self, server: APIServer, fallback: ASGIApp) -> None:
        self.server = server
        self.fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = _resource_target(scope["path"]) if scope["type"] == "http" else None
        if target is None:
            await self.fallback(scope, receive, send)
            return
        group, version, rest = target
        if self.server.discovery.resource_list(group, version) is None:
            response = _not_found()
        else:
            try:
                response = await self.server.handler.handle(
                    Request(scope, receive), group, version, rest.split("/")
                )
            except errors.StatusError as exc:
                response = status_response(exc)
            except Exception as exc:
                log.exception("%s %s failed", scope["method"], scope["path"])
                response = status_response(errors.internal(f"{type(exc).__name__}: {exc}"))
        await response(scope, receive, send)


def _resource_target(path: str) -> tuple[str, str, str] | None:
    """(group, version, rest) of ``/apis/<group>/<version>/<rest>`` or ``/api/<version>/<rest>``
    ("" as the core group); None for any other path."""
    if path.startswith("/apis/"):
        parts = path[6:].split("/", 2)
        if len(parts) == 3:
            return parts[0], parts[1], parts[2]
    elif path.startswith("/api/"):
        parts = path[5:].split("/", 1)
        if len(parts) == 2:
            return "", parts[0], parts[1]
    return None


def _not_found() -> Response:
    return status_response(
        errors.StatusError(404, "NotFound", "the server could not find the requested resource")
    )


def _cached(
    request: Request, body: bytes, digest: str, media_type: str = "application/json"
) -> Response:
    tag = f'"{digest}"'
    if request.headers.get("if-none-match") == tag:
        return Response(status_code=304, headers={"ETag": tag})
    return Response(body, media_type=media_type, headers={"ETag": tag, "Vary": "Accept"})


def _aggregated(request: Request, body: bytes) -> Response:
    tag = etag(body)
    if request.headers.get("if-none-match") == tag:
        return Response(status_code=304, headers={"ETag": tag})
    return Response(body, media_type=V2_CONTENT_TYPE, headers={"ETag": tag, "Vary": "Accept"})


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.requests = Counter(
            "apiserver_request_total",
            "Requests by method and HTTP code.",
            ["method", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "apiserver_request_duration_seconds",
            "Time to the response headers, by method.",
            ["method"],
            registry=self.registry,
        )
        self._children: dict[tuple[str, int], tuple[Any, Any]] = {}
        self.registry.register(_TerminatedWatchersCollector())

    def observe(self, method: str, code: int, seconds: float) -> None:
        children = self._children.get((method, code))
        if children is None:  # label lookups are slow; remember each combination's series
            children = (self.requests.labels(method, str(code)), self.latency.labels(method))
            self._children[(method, code)] = children
        children[0].inc()
        children[1].observe(seconds)


class _TerminatedWatchersCollector(Collector):
    """``apiserver_terminated_watchers_total{resource}``, from the storage layer's tally."""

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "apiserver_terminated_watchers",
            "Counter of watchers closed due to unresponsiveness broken by resource type.",
            labels=["resource"],
        )
        for resource, count in sorted(TERMINATED.counts().items()):
            family.add_metric([resource], count)
        yield family


class _MetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: _Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        method = scope["method"]

        async def send_and_count(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.metrics.observe(method, message["status"], time.perf_counter() - start)
            await send(message)

        await self.app(scope, receive, send_and_count)

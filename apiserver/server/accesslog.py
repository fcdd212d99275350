"""One access line per request, as kube-apiserver's httplog and audit log tell who asked.

``AccessLogMiddleware`` sits outside authentication: when the request is over (for a watch,
when the watch ends) it writes one JSON object to the ``apiserver.access`` logger with the
request's authorizer attributes (verb, apiGroup, resource, subresource, namespace, name),
the URI, the user as authenticated (``user``: username, uid, groups, extra, the shape of
``authentication.k8s.io/v1`` UserInfo) and, when the request impersonated someone, who it
ran as (``impersonatedUser``), the response code (``resp``), the latency, the user agent and
the client address. A request refused before anyone was recognised (401) has no ``user``.

It is installed only with ``--access-log``: without the flag no request pays for it.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..auth.middleware import ATTRIBUTES, AUTHENTICATED_USER
from ..machinery.user import UserInfo

log = logging.getLogger("apiserver.access")


def enable_access_log() -> None:
    """Send the access lines to stderr whatever ``--log-level`` says (the flag asked for them)."""
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def _user(user: UserInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {"username": user.name}
    if user.uid:
        entry["uid"] = user.uid
    entry["groups"] = list(user.groups)
    if user.extra:
        entry["extra"] = {k: list(v) for k, v in user.extra.items()}
    return entry


def access_line(scope: Scope, code: int, seconds: float) -> bytes:
    """The JSON line of a finished request (its attributes and users are in ``scope``)."""
    query = scope.get("query_string", b"")
    entry: dict[str, Any] = {
        "ts": time.time(),
        "msg": "HTTP",
        "verb": scope["method"].lower(),
        "URI": scope["path"] + ("?" + query.decode("latin-1") if query else ""),
    }
    attributes = scope.get(ATTRIBUTES)
    if attributes is not None:
        entry["verb"] = attributes.verb
        if attributes.resource_request:
            for key, value in (
                ("apiGroup", attributes.api_group),
                ("apiVersion", attributes.api_version),
                ("resource", attributes.resource),
                ("subresource", attributes.subresource),
                ("namespace", attributes.namespace),
                ("name", attributes.name),
            ):
                if value:
                    entry[key] = value
    authenticated: UserInfo | None = scope.get(AUTHENTICATED_USER)
    if authenticated is not None:
        entry["user"] = _user(authenticated)
        acting: UserInfo | None = scope.get("user")
        if acting is not None and acting is not authenticated:
            entry["impersonatedUser"] = _user(acting)
    entry["resp"] = code
    entry["latency"] = f"{seconds * 1000:.3f}ms"
    for name, value in scope.get("headers", ()):
        if name == b"user-agent":
            entry["userAgent"] = value.decode("latin-1")
            break
    client = scope.get("client")
    if client:
        entry["srcIP"] = f"{client[0]}:{client[1]}"
    return orjson.dumps(entry)


class AccessLogMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        code = 500  # what the client sees when the app raises before answering

        async def send_and_note(message: Message) -> None:
            nonlocal code
            if message["type"] == "http.response.start":
                code = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            log.info(access_line(scope, code, time.perf_counter() - start).decode())

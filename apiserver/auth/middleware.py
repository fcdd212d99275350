"""The ASGI middleware that authenticates every request before it is routed.

A request with a token the authenticator knows carries its ``UserInfo`` in
``scope["user"]`` (admission reads the name from there); any other request gets a 401
``Status``. Health and version paths are open, as in Kubernetes' default policy.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from ..machinery import errors
from ..machinery.handlers import status_response
from .tokens import TokenAuthenticator

PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})


class AuthenticationMiddleware:
    """Bearer tokens; with no authenticator every request passes."""

    def __init__(self, app: ASGIApp, authenticator: TokenAuthenticator | None) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.authenticator is None or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        header = None
        for key, value in scope["headers"]:
            if key == b"authorization":
                header = value.decode("latin-1")
                break
        user = self.authenticator.authenticate(header)
        if user is None:
            response = status_response(errors.unauthorized())
            await response(scope, receive, send)
            return
        scope["user"] = user
        await self.app(scope, receive, send)

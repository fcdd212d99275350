"""The ASGI middleware that authenticates and authorizes every request before it is routed.

Authentication: the chain's user goes into ``scope["user"]`` (admission and managed fields
read it from there); a request no method recognises gets a 401 ``Status``, except on the
public paths (health and version, as in Kubernetes' default policy). Authorization: the
request's attributes are put to the authorizer; anything not allowed gets a 403 ``Status``
worded as kube-apiserver words it. Impersonation headers, when sent, replace the user before
authorization (the caller must be allowed to impersonate). With no authenticator every
request passes as nobody.

For who-asked logging (server/accesslog.py), the scope also carries the user as
authenticated (``AUTHENTICATED_USER``, before impersonation) and the request's authorizer
attributes (``ATTRIBUTES``), from the moment they are known: a 403 names them too.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from ..machinery import errors, status_response
from ..machinery.user import AUTHENTICATED
from .authenticator import Authenticator
from .authorizer import AllowAuthenticated, Authorizer, forbidden, request_attributes
from .credentials import Credentials
from .impersonation import impersonate, wants_impersonation

PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})
AUTHENTICATED_USER = "auth.authenticated_user"
ATTRIBUTES = "auth.attributes"


class AuthMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator | None,
        authorizer: Authorizer | None = None,
        *,
        always_allow_paths: frozenset[str] = PUBLIC_PATHS,
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.authorizer = authorizer or AllowAuthenticated()
        self.always_allow_paths = always_allow_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or self.authenticator is None
            or scope["path"] in self.always_allow_paths
        ):
            await self.app(scope, receive, send)
            return
        credentials = Credentials.from_scope(scope)
        user = await self.authenticator.authenticate(credentials)
        if user is None:
            await status_response(errors.unauthorized())(scope, receive, send)
            return
        user = user.with_group(AUTHENTICATED)
        scope[AUTHENTICATED_USER] = user
        if wants_impersonation(credentials):
            try:
                user = await impersonate(user, credentials, self.authorizer)
            except errors.StatusError as err:
                await status_response(err)(scope, receive, send)
                return
        attributes = request_attributes(
            user, scope["method"], scope["path"], scope.get("query_string", b"").decode("latin-1")
        )
        scope["user"] = user
        scope[ATTRIBUTES] = attributes
        try:
            decision = await self.authorizer.authorize(attributes)
        except errors.StatusError as err:  # the authorizer could not decide (e.g. unreachable)
            await status_response(err)(scope, receive, send)
            return
        if not decision.allowed:
            await status_response(forbidden(attributes, decision.reason))(scope, receive, send)
            return
        await self.app(scope, receive, send)

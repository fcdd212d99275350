"""Bearer tokens checked by the kube-apiserver: a ``TokenReview`` per new token, cached.

As Kubernetes' delegating authenticator: ``POST /apis/authentication.k8s.io/v1/tokenreviews``
with the token; ``status.authenticated`` and ``status.user`` give the user. Both answers (a
user, or "not authenticated") are kept for ``--authentication-token-webhook-cache-ttl``
(10 s by default), keyed by the token's digest; a call that still fails after its retries
is not kept, and the request it served is not authenticated by this method (401 unless
another method knows it).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from ..kubeclient import KubeClient
from ..machinery.user import UserInfo
from ..toolkit import Backoff
from .cache import TTLCache
from .credentials import Credentials
from .review import DEFAULT_BACKOFF, ReviewError, post_review

log = logging.getLogger("apiserver")

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"


def bearer_token(credentials: Credentials) -> str | None:
    authorization = credentials.header("authorization")
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def user_of_review(status: dict[str, Any]) -> UserInfo | None:
    """The user of a TokenReview's status; None unless it says authenticated."""
    if not status.get("authenticated"):
        return None
    user = status.get("user") or {}
    name = str(user.get("username") or "")
    if not name:
        return None
    extra = {str(k): tuple(str(v) for v in vs or ()) for k, vs in (user.get("extra") or {}).items()}
    return UserInfo(
        name,
        str(user.get("uid") or ""),
        tuple(str(g) for g in user.get("groups") or ()),
        extra,
    )


class TokenReviewAuthenticator:
    def __init__(
        self,
        client: KubeClient,
        cache_ttl: float = 10.0,
        cache: TTLCache[bytes, UserInfo | bool] | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
    ) -> None:
        self.client = client
        self.backoff = backoff
        self.cache_ttl = cache_ttl
        # A cached False is "not authenticated", remembered like a user is.
        self.cache: TTLCache[bytes, UserInfo | bool] = cache if cache is not None else TTLCache()

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        token = bearer_token(credentials)
        if token is None:
            return None
        key = hashlib.sha256(token.encode()).digest()
        try:
            user = await self.cache.get_or_load(key, lambda: self._review(token))
        except ReviewError as exc:
            log.warning("bearer token not checked: %s", exc)
            return None
        return user if isinstance(user, UserInfo) else None

    async def _review(self, token: str) -> tuple[UserInfo | bool, float]:
        review = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        status = await post_review(self.client, TOKEN_REVIEWS, review, self.backoff)
        user = user_of_review(status)
        return (user if user is not None else False), self.cache_ttl

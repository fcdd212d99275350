"""Bearer tokens checked by the kube-apiserver: a ``TokenReview`` per new token, cached.

As Kubernetes' delegating authenticator: ``POST /apis/authentication.k8s.io/v1/tokenreviews``
with the token; ``status.authenticated`` and ``status.user`` give the user. Both answers (a
user, or "not authenticated") are kept for ``--authentication-token-webhook-cache-ttl``
(10 s by default), keyed by the token's digest; a failed call is not kept, and the request
it served is not authenticated by this method (401 unless another method knows it).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import httpx

from ..machinery.user import UserInfo
from .cache import TTLCache
from .credentials import Credentials

log = logging.getLogger("apiserver")

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"


class ReviewError(Exception):
    """The kube-apiserver could not be asked, or did not answer with a review."""


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


async def post_review(
    client: httpx.AsyncClient, path: str, review: dict[str, Any]
) -> dict[str, Any]:
    """The status of the review the kube-apiserver returns for ``review``."""
    try:
        response = await client.post(path, json=review)
    except httpx.HTTPError as exc:
        raise ReviewError(f"{review['kind']}: {exc!r}") from exc
    if response.status_code != 201 and response.status_code != 200:
        raise ReviewError(f"{review['kind']}: HTTP {response.status_code}: {response.text[:200]}")
    try:
        body = response.json()
    except ValueError as exc:
        raise ReviewError(f"{review['kind']}: the answer is not JSON") from exc
    status = body.get("status") if isinstance(body, dict) else None
    return status if isinstance(status, dict) else {}


class TokenReviewAuthenticator:
    def __init__(
        self,
        client: httpx.AsyncClient,
        cache_ttl: float = 10.0,
        cache: TTLCache[bytes, UserInfo | bool] | None = None,
    ) -> None:
        self.client = client
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
        status = await post_review(self.client, TOKEN_REVIEWS, review)
        user = user_of_review(status)
        return (user if user is not None else False), self.cache_ttl

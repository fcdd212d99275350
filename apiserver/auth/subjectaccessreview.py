"""Authorization asked of the kube-apiserver: a ``SubjectAccessReview`` per request, cached.

As Kubernetes' webhook authorizer in delegating mode: the spec carries the user exactly as
authenticated (name, uid, groups, extra) and either ``resourceAttributes`` or
``nonResourceAttributes``; ``status.allowed`` allows, ``status.denied`` denies, neither is
no opinion (which the server refuses as well). Answers are kept for
``--authorization-webhook-cache-authorized-ttl`` / ``-unauthorized-ttl`` (10 s each by
default), keyed by the whole spec. When the kube-apiserver cannot be asked (after the
retries of auth/review.py) the request is refused with a 500 ``Status``, as
kube-apiserver's authorization filter answers an error.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from ..kubeclient import KubeClient
from ..machinery import errors
from ..toolkit import Backoff
from .authorizer import Authorization, Decision, RequestAttributes
from .cache import TTLCache
from .review import DEFAULT_BACKOFF, ReviewError, post_review

log = logging.getLogger("apiserver")

SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def review_spec(attributes: RequestAttributes) -> dict[str, Any]:
    """The SubjectAccessReview spec of a request, empty fields left out."""
    user = attributes.user
    spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {k: list(v) for k, v in user.extra.items()}
    if attributes.resource_request:
        resource = {
            "namespace": attributes.namespace,
            "verb": attributes.verb,
            "group": attributes.api_group,
            "version": attributes.api_version,
            "resource": attributes.resource,
            "subresource": attributes.subresource,
            "name": attributes.name,
        }
        spec["resourceAttributes"] = {k: v for k, v in resource.items() if v}
    else:
        spec["nonResourceAttributes"] = {"path": attributes.path, "verb": attributes.verb}
    return spec


def decision_of_review(status: dict[str, Any]) -> Authorization:
    reason = str(status.get("reason") or "")
    if status.get("allowed"):
        return Authorization(Decision.ALLOW, reason)
    if status.get("denied"):
        return Authorization(Decision.DENY, reason)
    return Authorization(Decision.NO_OPINION, reason)


class SubjectAccessReviewAuthorizer:
    def __init__(
        self,
        client: KubeClient,
        allowed_ttl: float = 10.0,
        denied_ttl: float = 10.0,
        cache: TTLCache[bytes, Authorization] | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
    ) -> None:
        self.client = client
        self.backoff = backoff
        self.allowed_ttl = allowed_ttl
        self.denied_ttl = denied_ttl
        self.cache: TTLCache[bytes, Authorization] = cache if cache is not None else TTLCache()

    async def authorize(self, attributes: RequestAttributes) -> Authorization:
        spec = review_spec(attributes)
        key = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)
        try:
            return await self.cache.get_or_load(key, lambda: self._review(spec))
        except ReviewError as exc:
            log.warning("request not authorized: %s", exc)
            raise errors.internal(f"authorization could not be checked: {exc}") from exc

    async def _review(self, spec: dict[str, Any]) -> tuple[Authorization, float]:
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        decision = decision_of_review(
            await post_review(self.client, SUBJECT_ACCESS_REVIEWS, review, self.backoff)
        )
        return decision, self.allowed_ttl if decision.allowed else self.denied_ttl

"""auth/tokenreview.py and auth/subjectaccessreview.py against an in-process kube-apiserver
answer (httpx's MockTransport): the reviews sent, the users and decisions read back, and
how long answers are kept (on an injected clock)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from apiserver.auth import Credentials, RequestAttributes, UserInfo
from apiserver.auth.authorizer import Decision, request_attributes
from apiserver.auth.cache import TTLCache
from apiserver.auth.review import review_backoff
from apiserver.auth.subjectaccessreview import SubjectAccessReviewAuthorizer, review_spec
from apiserver.auth.tokenreview import TokenReviewAuthenticator
from apiserver.kubeclient import ClusterConfig, KubeClient
from apiserver.machinery import errors
from apiserver.toolkit import Backoff


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class KubeAPI:
    """Answers reviews; counts them; can be made to fail (the next ``failures`` calls, with
    ``failure_code``, or all while ``failing``)."""

    def __init__(self) -> None:
        self.reviews: list[dict[str, Any]] = []
        self.calls = 0
        self.allowed = True
        self.denied = False
        self.failing = False
        self.failures = 0
        self.failure_code = 503

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        if self.failing or self.failures > 0:
            self.failures -= 1
            code = self.failure_code
            return httpx.Response(code, json={"kind": "Status", "code": code})
        review = json.loads(request.content)
        self.reviews.append(review)
        if review["kind"] == "TokenReview":
            token = review["spec"]["token"]
            status: dict[str, Any] = {"authenticated": token == "good"}
            if token == "good":
                status["user"] = {
                    "username": "carol",
                    "uid": "c-1",
                    "groups": ["ops"],
                    "extra": {"scopes": ["a", "b"]},
                }
        else:
            status = {"allowed": self.allowed, "reason": "policy"}
            if self.denied:
                status["denied"] = True
        return httpx.Response(201, json={**review, "status": status})

    def client(self) -> KubeClient:
        return KubeClient(
            ClusterConfig("https://kube.example"), transport=httpx.MockTransport(self.handler)
        )


class Sleeps:
    """Backoff waits, recorded instead of slept."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def _no_wait() -> Backoff:
    return review_backoff(sleep=Sleeps())


def _bearer(token: str) -> Credentials:
    return Credentials((("authorization", f"Bearer {token}"),))


async def test_token_review_gives_the_user_and_is_kept_for_its_ttl() -> None:
    kube, clock = KubeAPI(), Clock()
    authenticator = TokenReviewAuthenticator(kube.client(), 10.0, TTLCache(clock=clock))
    user = await authenticator.authenticate(_bearer("good"))
    assert user == UserInfo("carol", "c-1", ("ops",), {"scopes": ("a", "b")})
    assert kube.reviews[0] == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "good"},
    }
    clock.now = 9.9
    assert await authenticator.authenticate(_bearer("good")) == user
    assert len(kube.reviews) == 1
    clock.now = 10.0
    assert await authenticator.authenticate(_bearer("good")) == user
    assert len(kube.reviews) == 2


async def test_rejected_token_is_no_user_and_kept_too() -> None:
    kube, clock = KubeAPI(), Clock()
    authenticator = TokenReviewAuthenticator(kube.client(), 10.0, TTLCache(clock=clock))
    assert await authenticator.authenticate(_bearer("bad")) is None
    assert await authenticator.authenticate(_bearer("bad")) is None
    assert len(kube.reviews) == 1


async def test_token_review_failure_is_no_user_and_not_kept() -> None:
    kube = KubeAPI()
    kube.failing = True
    authenticator = TokenReviewAuthenticator(kube.client(), backoff=_no_wait())
    assert await authenticator.authenticate(_bearer("good")) is None
    assert kube.calls == 5
    kube.failing = False
    assert await authenticator.authenticate(_bearer("good")) is not None


@pytest.mark.parametrize("header", ["", "Basic Zm9vOmJhcg==", "Bearer ", "Bearer"])
async def test_no_bearer_token_no_review(header: str) -> None:
    kube = KubeAPI()
    authenticator = TokenReviewAuthenticator(kube.client())
    assert await authenticator.authenticate(Credentials((("authorization", header),))) is None
    assert kube.reviews == []


BOB = UserInfo("bob", "b-1", ("dev", "system:authenticated"), {"scopes": ("x",)})


def test_review_spec_of_a_resource_request() -> None:
    attributes = request_attributes(
        BOB, "DELETE", "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c/status", ""
    )
    assert review_spec(attributes) == {
        "user": "bob",
        "uid": "b-1",
        "groups": ["dev", "system:authenticated"],
        "extra": {"scopes": ["x"]},
        "resourceAttributes": {
            "namespace": "ns",
            "verb": "delete",
            "group": "resource.k8s.io",
            "version": "v1",
            "resource": "resourceclaims",
            "subresource": "status",
            "name": "c",
        },
    }


def test_review_spec_of_a_non_resource_request() -> None:
    attributes = request_attributes(UserInfo("bob"), "GET", "/openapi/v2", "")
    assert review_spec(attributes) == {
        "user": "bob",
        "groups": [],
        "nonResourceAttributes": {"path": "/openapi/v2", "verb": "get"},
    }


def _list(user: UserInfo = BOB) -> RequestAttributes:
    return request_attributes(user, "GET", "/apis/resource.k8s.io/v1/resourceslices", "")


async def test_allowed_and_denied_answers_have_their_own_ttl() -> None:
    kube, clock = KubeAPI(), Clock()
    authorizer = SubjectAccessReviewAuthorizer(kube.client(), 30.0, 5.0, TTLCache(clock=clock))
    assert (await authorizer.authorize(_list())).decision is Decision.ALLOW
    assert kube.reviews[0]["kind"] == "SubjectAccessReview"
    assert kube.reviews[0]["apiVersion"] == "authorization.k8s.io/v1"
    kube.allowed = False
    clock.now = 29.9
    assert (await authorizer.authorize(_list())).decision is Decision.ALLOW
    assert len(kube.reviews) == 1
    clock.now = 30.0
    assert (await authorizer.authorize(_list())).decision is Decision.NO_OPINION
    assert len(kube.reviews) == 2
    kube.allowed = True
    clock.now = 34.9
    assert (await authorizer.authorize(_list())).decision is Decision.NO_OPINION
    clock.now = 35.0
    assert (await authorizer.authorize(_list())).decision is Decision.ALLOW
    assert len(kube.reviews) == 3


async def test_each_user_and_request_has_its_own_answer() -> None:
    kube = KubeAPI()
    authorizer = SubjectAccessReviewAuthorizer(kube.client())
    await authorizer.authorize(_list())
    await authorizer.authorize(_list(UserInfo("eve")))
    await authorizer.authorize(
        request_attributes(BOB, "GET", "/apis/resource.k8s.io/v1/resourceclaims", "")
    )
    assert len(kube.reviews) == 3


async def test_denied_carries_the_reason() -> None:
    kube = KubeAPI()
    kube.allowed, kube.denied = False, True
    answer = await SubjectAccessReviewAuthorizer(kube.client()).authorize(_list())
    assert (answer.decision, answer.reason) == (Decision.DENY, "policy")


async def test_unreachable_kube_apiserver_is_a_500_and_not_kept() -> None:
    kube = KubeAPI()
    kube.failing = True
    authorizer = SubjectAccessReviewAuthorizer(kube.client(), backoff=_no_wait())
    with pytest.raises(errors.StatusError) as caught:
        await authorizer.authorize(_list())
    assert caught.value.code == 500
    kube.failing = False
    assert (await authorizer.authorize(_list())).decision is Decision.ALLOW


async def test_transient_failures_are_retried_with_growing_waits() -> None:
    kube, sleeps = KubeAPI(), Sleeps()
    kube.failures = 2
    authorizer = SubjectAccessReviewAuthorizer(kube.client(), backoff=review_backoff(sleep=sleeps))
    assert (await authorizer.authorize(_list())).decision is Decision.ALLOW
    assert kube.calls == 3
    assert sleeps.waits == [0.5, 0.75]


async def test_a_refusal_is_not_retried() -> None:
    kube, sleeps = KubeAPI(), Sleeps()
    kube.failures, kube.failure_code = 1, 403
    authenticator = TokenReviewAuthenticator(kube.client(), backoff=review_backoff(sleep=sleeps))
    assert await authenticator.authenticate(_bearer("good")) is None
    assert (kube.calls, sleeps.waits) == (1, [])

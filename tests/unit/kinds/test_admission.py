"""Per-user rate limiting of ResourcePoolStatusRequest creation: a token bucket per user, and
429 TooManyRequests beyond it (without a Retry-After header, which client-go would retry
silently), applied through the strategy's admission hook with the user the authentication
middleware found (an admission plugin of the registry)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from apiserver.auth import TokenAuthenticator, UserInfo
from apiserver.kinds.admission import CreateRateLimit, UserRateLimiter
from apiserver.kinds.resourcepoolstatusrequest import ResourcePoolStatusRequestStrategy
from apiserver.machinery import AdmissionChain, ListOptions, Registry, WriteOptions
from apiserver.machinery.errors import StatusError
from apiserver.server.app import APIServer, ServerSettings, build_app
from apiserver.server.cluster import RateLimit, StandaloneCluster
from apiserver.storage.sqlite import SQLiteStore

GROUP = "resource.k8s.io"
PATH = f"/apis/{GROUP}/v1alpha1/resourcepoolstatusrequests"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def refused(limiter: UserRateLimiter, user: str) -> StatusError:
    with pytest.raises(StatusError) as raised:
        limiter.admit(user)
    return raised.value


def test_a_user_gets_the_burst_then_the_rate() -> None:
    clock = Clock()
    limiter = UserRateLimiter(0.5, 2, clock=clock)
    limiter.admit("alice")
    limiter.admit("alice")
    err = refused(limiter, "alice")
    assert (err.code, err.reason) == (429, "TooManyRequests")
    assert err.details == {"retryAfterSeconds": 2}  # one token every 2 s
    assert "Retry-After" not in (err.headers or {})  # client-go would retry it silently
    assert err.message == (
        "too many requests created by alice: each user may create 0.5 per second, in"
        " bursts of up to 2; retry after 2 seconds"
    )
    clock.now += 1.0
    assert refused(limiter, "alice").details == {"retryAfterSeconds": 1}
    clock.now += 1.0
    limiter.admit("alice")
    refused(limiter, "alice")


def test_users_have_buckets_of_their_own() -> None:
    limiter = UserRateLimiter(1, 1, clock=Clock())
    limiter.admit("alice")
    refused(limiter, "alice")
    limiter.admit("bob")


def test_a_dry_run_is_checked_but_takes_nothing() -> None:
    limiter = UserRateLimiter(1, 1, clock=Clock())
    limiter.admit("alice", dry_run=True)
    limiter.admit("alice", dry_run=True)
    limiter.admit("alice")
    with pytest.raises(StatusError):
        limiter.admit("alice", dry_run=True)


def test_a_limit_needs_a_rate_and_a_burst() -> None:
    with pytest.raises(ValueError, match="rate"):
        UserRateLimiter(0, 1)
    with pytest.raises(ValueError, match="burst"):
        UserRateLimiter(1, 0)


def request(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": {"driver": "gpu.example.com"},
    }


def limited_registry(store: SQLiteStore, rate: float, burst: int) -> Registry:
    """The registry of ResourcePoolStatusRequests with the rate limit in its admission chain."""
    strategy = ResourcePoolStatusRequestStrategy.for_group(GROUP)
    limiter = UserRateLimiter(
        rate,
        burst,
        what=strategy.resource.plural,
        flags=("--pool-status-create-rate", "--pool-status-create-burst"),
    )
    return Registry(strategy, store, AdmissionChain([CreateRateLimit(strategy.resource, limiter)]))


async def test_the_registry_refuses_a_create_past_the_limit_and_stores_nothing(
    store: SQLiteStore,
) -> None:
    registry = limited_registry(store, 0.01, 2)
    alice = WriteOptions(user=UserInfo("alice"))
    await registry.create(None, request("a-1"), alice)
    await registry.create(None, request("a-2"), alice)
    with pytest.raises(StatusError) as raised:
        await registry.create(None, request("a-3"), alice)
    assert raised.value.code == 429
    assert raised.value.details is not None
    seconds = raised.value.details["retryAfterSeconds"]
    assert seconds >= 1
    message = raised.value.message
    assert "--pool-status-create-rate" in message
    assert "--pool-status-create-burst" in message
    assert f"retry after {seconds} seconds" in message
    await registry.create(None, request("b-1"), WriteOptions(user=UserInfo("bob")))
    names = [i.obj["metadata"]["name"] for i in (await registry.list(None, ListOptions())).items]
    assert sorted(names) == ["a-1", "a-2", "b-1"]


async def test_an_invalid_request_takes_no_token(store: SQLiteStore) -> None:
    registry = limited_registry(store, 0.01, 1)
    bad = request("bad")
    bad["spec"]["limit"] = 5000
    with pytest.raises(StatusError) as raised:
        await registry.create(None, bad, WriteOptions(user=UserInfo("alice")))
    assert raised.value.code == 422
    await registry.create(None, request("good"), WriteOptions(user=UserInfo("alice")))


async def test_a_rate_of_zero_lifts_the_limit(store: SQLiteStore) -> None:
    cluster = StandaloneCluster(
        store, GROUP, authenticator=None, authorizer=None, pool_status_create_limit=RateLimit(0, 1)
    )
    registry = cluster.registry(ResourcePoolStatusRequestStrategy.for_group(GROUP).resource)
    for i in range(5):
        await registry.create(None, request(f"r-{i}"), WriteOptions(user=UserInfo("alice")))


async def test_over_http_the_limit_is_per_authenticated_user(store: SQLiteStore) -> None:
    cluster = StandaloneCluster(
        store,
        GROUP,
        authenticator=None,
        authorizer=None,
        pool_status_create_limit=RateLimit(0.01, 1),
    )
    server = APIServer(store, cluster.served(), ServerSettings())
    server.ready = True
    users = {"alice-token": UserInfo("alice"), "bob-token": UserInfo("bob")}
    app = build_app(server, TokenAuthenticator(users))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://test") as client:

        async def create(token: str, name: str) -> httpx.Response:
            return await client.post(
                PATH, json=request(name), headers={"Authorization": f"Bearer {token}"}
            )

        assert (await create("alice-token", "a-1")).status_code == 201
        second = await create("alice-token", "a-2")
        assert second.status_code == 429
        assert "Retry-After" not in second.headers
        body = second.json()
        assert body["details"]["retryAfterSeconds"] >= 1
        assert (body["kind"], body["reason"], body["code"]) == ("Status", "TooManyRequests", 429)
        assert (await create("bob-token", "b-1")).status_code == 201

"""auth/authorizer.py and the middleware: request attributes as Kubernetes resolves them, the
403 worded as kube-apiserver words it, and a denying authorizer refusing before routing."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from apiserver.auth import (
    AuthMiddleware,
    Authorization,
    Decision,
    RequestAttributes,
    TokenAuthenticator,
    UserInfo,
    forbidden,
    request_attributes,
)
from apiserver.machinery.user import AUTHENTICATED

ALICE = UserInfo("alice", groups=(AUTHENTICATED,))


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        (
            "GET",
            "/apis/resource.k8s.io/v1alpha3/resourceslicepatches",
            "",
            ("list", True, "", "resource.k8s.io", "resourceslicepatches", "", ""),
        ),
        (
            "GET",
            "/apis/resource.k8s.io/v1alpha3/resourceslicepatches",
            "watch=true",
            ("watch", True, "", "resource.k8s.io", "resourceslicepatches", "", ""),
        ),
        (
            "PUT",
            "/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaims/c/status",
            "",
            ("update", True, "ns1", "resource.k8s.io", "resourceclaims", "status", "c"),
        ),
        (
            "DELETE",
            "/api/v1/namespaces/default/events",
            "",
            ("deletecollection", True, "default", "", "events", "", ""),
        ),
        ("GET", "/apis/resource.k8s.io", "", ("get", False, "", "", "", "", "")),
        ("POST", "/version", "", ("post", False, "", "", "", "", "")),
    ],
)
def test_request_attributes(
    method: str, path: str, query: str, expected: tuple[str, bool, str, str, str, str, str]
) -> None:
    a = request_attributes(ALICE, method, path, query)
    got = (a.verb, a.resource_request, a.namespace, a.api_group, a.resource, a.subresource, a.name)
    assert got == expected
    assert a.path == path


def test_forbidden_is_worded_as_kubernetes_words_it() -> None:
    attrs = request_attributes(
        ALICE, "GET", "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims", ""
    )
    err = forbidden(attrs)
    assert err.code == 403
    assert err.reason == "Forbidden"
    assert err.message == (
        'resourceclaims.resource.k8s.io is forbidden: User "alice" cannot list resource'
        ' "resourceclaims" in API group "resource.k8s.io" in the namespace "a"'
    )
    named = request_attributes(ALICE, "PATCH", "/api/v1/nodes/n1/status", "")
    assert forbidden(named, "no rule").message == (
        'nodes "n1" is forbidden: User "alice" cannot patch resource "nodes/status" in API'
        ' group "" at the cluster scope: no rule'
    )
    path = request_attributes(ALICE, "GET", "/metrics", "")
    assert forbidden(path).message == 'forbidden: User "alice" cannot get path "/metrics"'


class _DenyEvents:
    def __init__(self) -> None:
        self.seen: list[RequestAttributes] = []

    async def authorize(self, attributes: RequestAttributes) -> Authorization:
        self.seen.append(attributes)
        if attributes.resource == "events":
            return Authorization(Decision.DENY, "events are private")
        return Authorization(Decision.ALLOW)


async def test_the_middleware_authorizes_every_request_with_the_whole_user() -> None:
    async def ok(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("routed")

    inner = Starlette()
    inner.add_route("/{rest:path}", ok, ["GET"])
    authorizer = _DenyEvents()
    app = AuthMiddleware(
        inner,
        TokenAuthenticator({"t": UserInfo("bob", "u-1", ("team",))}),
        authorizer,
    )
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": "Bearer t"}
    async with httpx.AsyncClient(transport=transport, base_url="https://test") as client:
        denied = await client.get("/api/v1/namespaces/x/events", headers=headers)
        allowed = await client.get("/apis/resource.k8s.io/v1/resourceslices", headers=headers)
        anonymous = await client.get("/apis/resource.k8s.io/v1/resourceslices")
        health = await client.get("/healthz")
    assert denied.status_code == 403
    assert denied.json()["message"].endswith(": events are private")
    assert allowed.status_code == 200
    assert allowed.text == "routed"
    assert anonymous.status_code == 401
    assert health.status_code == 200
    user = authorizer.seen[0].user
    assert (user.name, user.uid, user.groups) == ("bob", "u-1", ("team", AUTHENTICATED))
    assert [a.resource for a in authorizer.seen] == ["events", "resourceslices"]

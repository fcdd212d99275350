"""machinery/review.py: a create-only kind that is never stored, proven with a small test kind
served through the real app — POST answers 201 with the object and its computed status, the
body is validated once (422 naming the field, unknown fields per fieldValidation), nothing is
written, every other verb is 405, and discovery and OpenAPI offer create only."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pydantic import Field

from apiserver.api import APIModel, KindModel
from apiserver.api.field import FieldError, invalid
from apiserver.machinery import ReviewResource, ReviewStrategy
from apiserver.machinery.user import UserInfo
from apiserver.server.app import APIServer, ServerSettings, build_app
from apiserver.storage.sqlite import SQLiteStore

GROUP = "review.example.com"
PATH = f"/apis/{GROUP}/v1/sumreviews"


class SumSpec(APIModel):
    terms: list[int] = Field(description="Numbers to add.")


class SumReview(KindModel):
    spec: SumSpec = Field(description="What to add.")
    status: dict[str, Any] | None = Field(None, description="The answer.")


class SumReviewStrategy(ReviewStrategy[SumReview]):
    model = SumReview
    version = "v1"
    kind = "SumReview"
    plural = "sumreviews"
    singular = "sumreview"

    def validate(self, obj: SumReview) -> list[FieldError]:
        if len(obj.spec.terms) > 3:
            return [invalid("spec.terms", len(obj.spec.terms), "at most 3 terms")]
        return []

    async def review(self, obj: SumReview, user: UserInfo) -> dict[str, Any]:
        return {"sum": sum(obj.spec.terms), "askedBy": user.name}


class _Alice:
    async def authenticate(self, _credentials: Any) -> UserInfo:
        return UserInfo("alice")


@pytest.fixture
async def client(store: SQLiteStore) -> Any:
    server = APIServer(store, [ReviewResource(SumReviewStrategy(GROUP))], ServerSettings())
    server.ready = True
    app = build_app(server, _Alice())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://test") as c:
        yield c


def review(*terms: Any, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "SumReview",
        "spec": {"terms": list(terms)},
        **extra,
    }


async def test_create_answers_with_the_computed_status_and_stores_nothing(
    client: httpx.AsyncClient, store: SQLiteStore
) -> None:
    before = store.revision
    answer = await client.post(PATH, json=review(1, 2, 3))
    assert answer.status_code == 201
    body = answer.json()
    assert body["status"] == {"sum": 6, "askedBy": "alice"}
    assert body["spec"] == {"terms": [1, 2, 3]}
    assert (body["apiVersion"], body["kind"]) == (f"{GROUP}/v1", "SumReview")
    assert "resourceVersion" not in body["metadata"]
    assert store.revision == before  # never written


async def test_a_status_sent_by_the_client_is_replaced(client: httpx.AsyncClient) -> None:
    answer = await client.post(PATH, json=review(5, status={"sum": 99}))
    assert answer.json()["status"]["sum"] == 5


async def test_bad_input_is_422_naming_the_field(client: httpx.AsyncClient) -> None:
    typed = await client.post(PATH, json=review("x"))
    assert typed.status_code == 422
    assert typed.json()["details"]["causes"][0]["field"] == "spec.terms[0]"
    ruled = await client.post(PATH, json=review(1, 2, 3, 4))
    assert ruled.status_code == 422
    assert ruled.json()["details"]["causes"][0]["field"] == "spec.terms"
    strict = await client.post(
        PATH, params={"fieldValidation": "Strict"}, json={**review(1), "extra": 1}
    )
    assert strict.status_code == 400
    warned = await client.post(PATH, json={**review(1), "extra": 1})
    assert warned.status_code == 201
    assert warned.headers["warning"] == '299 - "unknown field \\"extra\\""'


async def test_every_other_verb_is_405(client: httpx.AsyncClient) -> None:
    for method, path in (
        ("GET", PATH),
        ("GET", f"{PATH}/x"),
        ("PUT", f"{PATH}/x"),
        ("PATCH", f"{PATH}/x"),
        ("DELETE", f"{PATH}/x"),
        ("DELETE", PATH),
    ):
        answer = await client.request(
            method, path, content=b"{}", headers={"Content-Type": "application/merge-patch+json"}
        )
        assert answer.status_code == 405, (method, path)
        assert answer.json()["reason"] == "MethodNotAllowed"


async def test_discovery_and_openapi_offer_create_only(client: httpx.AsyncClient) -> None:
    resources = (await client.get(f"/apis/{GROUP}/v1")).json()["resources"]
    assert [(r["name"], r["verbs"]) for r in resources] == [("sumreviews", ["create"])]
    paths = (await client.get(f"/openapi/v3/apis/{GROUP}/v1")).json()["paths"]
    assert [p for p in paths if "sumreviews" in p] == [PATH]
    assert [m for m in paths[PATH] if m != "parameters"] == ["post"]

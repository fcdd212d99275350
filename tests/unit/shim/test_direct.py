"""The extender's verbs served without FastAPI's layers (``DirectVerbs``): a POST to a verb
reaches its endpoint directly, an unexpected failure is a 500 carrying the protocol's
``Error``, and anything else is the FastAPI app's to answer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import orjson
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import Response

from apiserver.shim.app import DirectVerbs

THROUGH_FASTAPI = "x-through-fastapi"


def _app() -> FastAPI:
    app = FastAPI()

    @app.middleware("http")
    async def mark(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        response.headers[THROUGH_FASTAPI] = "yes"
        return response

    @app.post("/filter")
    async def filter_nodes(request: Request) -> Response:
        body = orjson.loads(await request.body())
        return Response(orjson.dumps({"NodeNames": body["NodeNames"]}), 200)

    @app.post("/bind")
    async def bind(request: Request) -> Response:
        raise RuntimeError("a bug")

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response("ok")

    return app


@pytest.fixture
async def shim() -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(DirectVerbs(_app()), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://shim") as client:
        yield client


async def test_a_verb_is_answered_by_its_endpoint_without_fastapi(
    shim: httpx.AsyncClient,
) -> None:
    answer = await shim.post("/filter", json={"NodeNames": ["a", "b"]})
    assert answer.status_code == 200
    assert answer.json() == {"NodeNames": ["a", "b"]}
    assert THROUGH_FASTAPI not in answer.headers


async def test_an_unexpected_failure_is_a_500_with_the_protocols_error(
    shim: httpx.AsyncClient,
) -> None:
    answer = await shim.post("/bind", json={})
    assert answer.status_code == 500
    assert "RuntimeError" in answer.json()["Error"]


@pytest.mark.parametrize(
    ("method", "path", "code"),
    [("GET", "/healthz", 200), ("GET", "/filter", 405), ("POST", "/prioritize", 404)],
)
async def test_anything_else_goes_to_the_app(
    shim: httpx.AsyncClient, method: str, path: str, code: int
) -> None:
    answer = await shim.request(method, path)
    assert answer.status_code == code
    assert answer.headers[THROUGH_FASTAPI] == "yes"

"""CEL selectors of ResourceSlicePatch against the real server: 422 with the field path and the
CEL error; pathological expressions are rejected while the server keeps answering."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from .harness import ServerProcess
from .objects import RSP_PATH, is_status, rsp, unique

FIELD = "spec.devices.filter.selectors[{}].cel.expression"


def with_selectors(name: str, *expressions: str) -> dict[str, Any]:
    return rsp(name, filter={"selectors": [{"cel": {"expression": e}} for e in expressions]})


def nested(depth: int, salt: int) -> str:
    body = f"device.attributes['gpu.example.com'].index != {salt}"
    for i in range(depth):
        body = f"device.attributes.all(a{i}, device.attributes[a{i}].all(b{i}, {body}))"
    return body


def causes(resp: httpx.Response) -> list[dict[str, Any]]:
    body = resp.json()
    assert is_status(body, 422), body
    result: list[dict[str, Any]] = body["details"]["causes"]
    return result


@pytest.fixture
def client(server: ServerProcess) -> Any:
    with server.client() as c:
        yield c


def test_valid_selectors_are_stored(client: httpx.Client) -> None:
    name = unique("cel-ok")
    expressions = (
        'device.driver == "gpu.example.com"',
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0 && '
        'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))',
    )
    resp = client.post(RSP_PATH, json=with_selectors(name, *expressions))
    assert resp.status_code == 201, resp.text
    stored = resp.json()["spec"]["devices"]["filter"]["selectors"]
    assert [s["cel"]["expression"] for s in stored] == list(expressions)


def test_bad_selector_is_422_with_the_field_and_the_cel_error(client: httpx.Client) -> None:
    name = unique("cel-bad")
    resp = client.post(
        RSP_PATH, json=with_selectors(name, 'device.driver == "x"', "device.driver ==")
    )
    assert resp.status_code == 422, resp.text
    [cause] = causes(resp)
    assert cause["field"] == FIELD.format(1)
    assert cause["reason"] == "FieldValueInvalid"
    assert "compilation failed: ERROR: <input>:1:17: Syntax error" in cause["message"]
    assert FIELD.format(1) in resp.json()["message"]
    assert client.get(f"{RSP_PATH}/{name}").status_code == 404


def test_undefined_device_field_is_422(client: httpx.Client) -> None:
    resp = client.post(RSP_PATH, json=with_selectors(unique("cel-field"), "device.nme == 'x'"))
    assert resp.status_code == 422, resp.text
    [cause] = causes(resp)
    assert cause["field"] == FIELD.format(0)
    assert "undefined field 'nme'" in cause["message"]


def test_too_expensive_selector_is_forbidden(client: httpx.Client) -> None:
    resp = client.post(RSP_PATH, json=with_selectors(unique("cel-cost"), nested(2, 0)))
    assert resp.status_code == 422, resp.text
    [cause] = causes(resp)
    assert cause["field"] == FIELD.format(0)
    assert cause["reason"] == "FieldValueForbidden"
    assert "too complex, exceeds cost limit" in cause["message"]


def test_bad_selector_on_update_is_422_and_keeps_the_object(client: httpx.Client) -> None:
    name = unique("cel-upd")
    created = client.post(RSP_PATH, json=with_selectors(name, 'device.driver == "x"'))
    assert created.status_code == 201, created.text
    obj = created.json()
    obj["spec"]["devices"]["filter"]["selectors"][0]["cel"]["expression"] = "device.driver =="
    resp = client.put(f"{RSP_PATH}/{name}", json=obj)
    assert resp.status_code == 422, resp.text
    assert [c["field"] for c in causes(resp)] == [FIELD.format(0)]
    assert client.get(f"{RSP_PATH}/{name}").json() == created.json()


def test_kubectl_shows_the_field_and_the_error(server: ServerProcess) -> None:
    manifest = json.dumps(with_selectors(unique("cel-kubectl"), "device.driver.startsWith(1)"))
    result = server.kubectl("create", "-f", "-", input=manifest, check=False)
    assert result.returncode != 0
    assert FIELD.format(0) in result.stderr
    assert "no matching overload" in result.stderr


async def test_server_keeps_answering_while_pathological_selectors_are_rejected(
    server: ServerProcess,
) -> None:
    async with server.async_client() as aclient:
        health: list[int] = []
        stop = asyncio.Event()

        async def poll() -> None:
            while not stop.is_set():
                health.append((await aclient.get("/healthz")).status_code)

        async def create(i: int) -> httpx.Response:
            # distinct texts, so none is answered from the compile cache
            return await aclient.post(
                RSP_PATH, json=with_selectors(unique("cel-path"), nested(3, i))
            )

        poller = asyncio.create_task(poll())
        responses = await asyncio.gather(*(create(i) for i in range(20)))
        health.append((await aclient.get("/healthz")).status_code)
        stop.set()
        await poller

    for resp in responses:
        assert resp.status_code == 422, resp.text
        [cause] = causes(resp)
        assert cause["reason"] == "FieldValueForbidden"
    assert health
    assert set(health) == {200}

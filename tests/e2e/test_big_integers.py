"""Integers beyond 64 bits are a 400 ``Status`` wherever they come in, and nothing changes.

Kubernetes' integers are Go ``int64``. Each case sends one integer outside that range in
one way a request can carry it — a JSON, YAML or protobuf body, an update, a merge, JSON or
strategic merge patch, server-side apply — and checks that the answer is a 400 naming the
field, and that the stored collections (and the object aimed at) are as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from apiserver import protowire as wire

from .badinput import (
    APPLY,
    JSON_PATCH,
    MERGE,
    RSP,
    RSP_GV,
    Req,
    assert_status,
    rsp,
    seed,
    snapshot,
)
from .harness import ServerProcess, module_server
from .objects import unique

STRATEGIC = "application/strategic-merge-patch+json"
YAML = "application/yaml"
PRIORITY = "spec.devices.priority"

BEYOND = {
    "2^63": str(2**63),
    "2^64": str(2**64),
    "-2^63-1": str(-(2**63) - 1),
    "5000-digits": "9" * 5000,
}
"""Integer literals just past int64 either way, past uint64 (orjson reads that as a float),
and longer than Python converts."""


own_server = module_server("big-integers")


@pytest.fixture(scope="module")
def client(own_server: ServerProcess) -> Iterator[httpx.Client]:
    with own_server.client() as c:
        yield c


def _json(obj: Any, literal: str) -> bytes:
    """``obj`` as JSON, with every string ``"@"`` replaced by the bare number ``literal``."""
    return json.dumps(obj).replace('"@"', literal).encode()


def _rsp_yaml(name: str, literal: str) -> bytes:
    return (
        f"apiVersion: {RSP_GV}\nkind: ResourceSlicePatch\nmetadata:\n  name: {name}\n"
        f"spec:\n  devices:\n    priority: {literal}\n"
    ).encode()


@dataclass(frozen=True)
class Case:
    id: str
    build: Callable[[str, str, dict[str, Any]], Req]
    """From a fresh name, the integer literal and the seeded object (if ``seeded``)."""
    field: str = PRIORITY
    seeded: bool = False


def _put(name: str, literal: str, target: dict[str, Any]) -> Req:
    obj = dict(target)
    obj["spec"] = {"devices": {"priority": "@"}}
    return Req("PUT", f"{RSP}/{name}", _json(obj, literal))


CASES = [
    Case("json-create", lambda n, lit, _: Req("POST", RSP, _json(rsp(n, priority="@"), lit))),
    Case(
        "json-create-unknown-field",
        lambda n, lit, _: Req(
            "POST", RSP, _json(rsp(n, priority=1, bogus=[1, {"deep": "@"}]), lit)
        ),
        field="spec.devices.bogus[1].deep",
    ),
    Case(
        "yaml-create",
        lambda n, lit, _: Req("POST", RSP, _rsp_yaml(n, lit), YAML),
    ),
    Case("json-update", _put, seeded=True),
    Case(
        "merge-patch",
        lambda n, lit, _: Req(
            "PATCH", f"{RSP}/{n}", _json({"spec": {"devices": {"priority": "@"}}}, lit), MERGE
        ),
        seeded=True,
    ),
    Case(
        "strategic-merge-patch",
        lambda n, lit, _: Req(
            "PATCH", f"{RSP}/{n}", _json({"spec": {"devices": {"priority": "@"}}}, lit), STRATEGIC
        ),
        seeded=True,
    ),
    Case(
        "json-patch",
        lambda n, lit, _: Req(
            "PATCH",
            f"{RSP}/{n}",
            _json([{"op": "replace", "path": "/spec/devices/priority", "value": "@"}], lit),
            JSON_PATCH,
        ),
        field="[0].value",
        seeded=True,
    ),
    Case(
        "apply-yaml",
        lambda n, lit, _: Req(
            "PATCH", f"{RSP}/{n}", _rsp_yaml(n, lit), APPLY, {"fieldManager": "big"}
        ),
        seeded=True,
    ),
    Case(
        "apply-yaml-creating",
        lambda n, lit, _: Req(
            "PATCH", f"{RSP}/{n}", _rsp_yaml(n, lit), APPLY, {"fieldManager": "big"}
        ),
    ),
    Case(
        "apply-json",
        lambda n, lit, _: Req(
            "PATCH",
            f"{RSP}/{n}",
            _json(rsp(n, priority="@"), lit),
            APPLY,
            {"fieldManager": "big"},
        ),
        seeded=True,
    ),
]


@pytest.mark.parametrize("literal", list(BEYOND.values()), ids=list(BEYOND))
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_an_integer_beyond_64_bits_is_a_400_and_changes_nothing(
    client: httpx.Client, case: Case, literal: str
) -> None:
    name = unique("big")
    urls: list[str] = []
    target: dict[str, Any] = {}
    if case.seeded:
        url, target = seed(client, "rsp", name)
        urls.append(url)
    before = snapshot(client, urls)

    response = case.build(name, literal, target).send(client)

    assert_status(response, 400, "BadRequest", case.field)
    assert len(response.text) < 2000  # the number is not echoed whole
    assert snapshot(client, urls) == before


@pytest.mark.parametrize("literal", ["0x1_0000_0000_0000_0000", "0b1" + "0" * 64, "-02" + "0" * 21])
def test_yaml_integers_in_other_bases_are_checked_too(client: httpx.Client, literal: str) -> None:
    before = snapshot(client)
    response = Req("POST", RSP, _rsp_yaml(unique("big"), literal), YAML).send(client)
    assert_status(response, 400, "BadRequest", PRIORITY)
    assert snapshot(client) == before


@pytest.mark.parametrize("literal", [str(2**63 - 1), str(-(2**63))])
def test_the_int64_bounds_themselves_are_read(client: httpx.Client, literal: str) -> None:
    """The check is the range, not the digit count: the extremes are integers like any
    other (the object is then judged by its kind's own validation)."""
    for body, content_type in (
        (_json(rsp(unique("edge"), priority="@"), literal), "application/json"),
        (_rsp_yaml(unique("edge"), literal), YAML),
    ):
        response = Req("POST", RSP, body, content_type).send(client)
        assert response.status_code != 400 or PRIORITY not in response.text, response.text
        assert response.status_code < 500, response.text


def _namespace_protobuf(name: str, generation: bytes) -> bytes:
    """A v1 Namespace in Kubernetes' protobuf envelope, its metadata.generation given as
    raw varint bytes (field 7 of ObjectMeta)."""
    meta = wire.encode([wire.string_field(1, name)]) + b"\x38" + generation
    namespace = wire.encode([wire.bytes_field(1, meta)])
    type_meta = wire.encode([wire.string_field(1, "v1"), wire.string_field(2, "Namespace")])
    unknown = wire.encode([wire.bytes_field(1, type_meta), wire.bytes_field(2, namespace)])
    return b"k8s\x00" + unknown


def test_a_protobuf_varint_beyond_64_bits_is_a_400(client: httpx.Client) -> None:
    protobuf = "application/vnd.kubernetes.protobuf"

    def names() -> set[str]:
        return {i["metadata"]["name"] for i in client.get("/api/v1/namespaces").json()["items"]}

    before = names()
    name = unique("big-ns")
    overflowing = b"\xff" * 9 + b"\x7f"  # 70 bits
    response = client.post(
        "/api/v1/namespaces",
        content=_namespace_protobuf(name, overflowing),
        headers={"Content-Type": protobuf},
    )
    assert_status(response, 400, "BadRequest")
    assert names() == before
    # The same body with a small generation is a well-formed namespace.
    fine = client.post(
        "/api/v1/namespaces",
        content=_namespace_protobuf(name, wire.varint(5)),
        headers={"Content-Type": protobuf},
    )
    assert fine.status_code == 201, fine.text
    assert names() == before | {name}


def test_a_query_integer_of_thousands_of_digits_is_a_400(client: httpx.Client) -> None:
    response = client.get(RSP, params={"limit": "9" * 5000})
    assert_status(response, 400, "BadRequest")
    response = client.get(RSP, params={"resourceVersion": "9" * 5000})
    assert_status(response, 400, "BadRequest")

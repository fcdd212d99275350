"""Bad input gets a Kubernetes Status naming the problem, and nothing stored changes.

Each case sends one malformed, invalid or unsupported request to the real server and
checks both halves of DESIGN section 10: the answer is a ``Status`` (kind Status, apiVersion
v1, status Failure) with the right code, reason and field, and the stored state (both
collections' items with their resourceVersions, and the bytes of any object the request
aimed at) is exactly as before.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest

from .badinput import (
    APPLY,
    JSON,
    JSON_PATCH,
    MERGE,
    MIB,
    RPSR,
    RPSR_GV,
    RSP,
    RSP_GV,
    Req,
    assert_status,
    edited,
    patch,
    post,
    put,
    rpsr,
    rsp,
    seed,
    snapshot,
)
from .harness import ServerProcess, module_server
from .objects import unique

own_server = module_server("bad-input")
"""A server of this module's own, so whole collections can be compared before and after."""


@pytest.fixture(scope="module")
def client(own_server: ServerProcess) -> Iterator[httpx.Client]:
    with own_server.client() as c:
        yield c


# -- cases ---------------------------------------------------------------------------

Build = Callable[[str, dict[str, Any]], Req]
"""Builds the bad request from a fresh unique name and the seed object (empty if none)."""


@dataclass(frozen=True)
class Case:
    id: str
    build: Build
    code: int
    reason: str
    field: str | None = None  # must appear among details.causes[].field
    message: str | None = None  # must appear in the message
    seed: str | None = None  # "rsp" or "rpsr": an object named ``name`` exists first


def _attrs(n: int) -> dict[str, Any]:
    return {f"gpu.example.com/a{i}": {"int": i} for i in range(n)}


def _caps(n: int) -> dict[str, Any]:
    return {f"gpu.example.com/c{i}": {"value": "1Gi"} for i in range(n)}


def _nested(obj: dict[str, Any], depth: int) -> bytes:
    """``obj`` as JSON with an object ``depth`` levels deep under spec.devices.bogus."""
    obj = edited(obj, lambda o: o.setdefault("spec", {}).setdefault("devices", {}))
    obj["spec"]["devices"]["bogus"] = "@"
    deep = b'{"x":' * depth + b"1" + b"}" * depth
    return orjson.dumps(obj).replace(b'"@"', deep)


def _without_rv(obj: dict[str, Any]) -> None:
    del obj["metadata"]["resourceVersion"]


def _numeric_rv(obj: dict[str, Any]) -> None:
    obj["metadata"]["resourceVersion"] = int(obj["metadata"]["resourceVersion"])


def _set_priority_7(obj: dict[str, Any]) -> None:
    obj["spec"]["devices"]["priority"] = 7


def _stale_rv(obj: dict[str, Any]) -> None:
    obj["metadata"]["resourceVersion"] = "1"
    obj["spec"]["devices"]["priority"] = 7


CASES: list[Case] = [
    # -- bodies that are not a JSON object ---------------------------------------
    Case(
        "malformed-json",
        lambda n, _: Req("POST", RSP, b'{"apiVersion": "resource.k8s.io/v1alpha3", "kind": '),
        400,
        "BadRequest",
    ),
    Case(
        "malformed-yaml",
        lambda n, _: Req(
            "POST",
            RSP,
            f"apiVersion: {RSP_GV}\nkind: ResourceSlicePatch\nmetadata: {{name: [{n}\n".encode(),
            "application/yaml",
        ),
        400,
        "BadRequest",
    ),
    Case("body-json-array", lambda n, _: post(RSP, [rsp(n)]), 400, "BadRequest", message="array"),
    Case(
        "body-json-string",
        lambda n, _: post(RSP, "just a string"),
        400,
        "BadRequest",
        None,
        "string",
    ),
    Case("body-empty", lambda n, _: Req("POST", RSP, b""), 400, "BadRequest"),
    Case(
        "strict-unknown-field",
        lambda n, _: post(RSP, rsp(n, priority=1, bogus=True), fieldValidation="Strict"),
        400,
        "BadRequest",
        message="spec.devices.bogus",
    ),
    # -- bodies in a format other than JSON or YAML ----------------------------------
    *[
        Case(
            f"create-as-{kind.replace('/', '-')}",
            lambda n, _, kind=kind: Req("POST", RSP, orjson.dumps(rsp(n)), kind),
            415,
            "UnsupportedMediaType",
            message=kind,
        )
        for kind in (
            "text/plain",
            "application/xml",
            "application/vnd.kubernetes.protobuf",
            "application/x-www-form-urlencoded",
        )
    ],
    *[
        Case(
            f"update-as-{kind.replace('/', '-')}",
            lambda n, seed, kind=kind: Req(
                "PUT", f"{RSP}/{n}", orjson.dumps(edited(seed, _set_priority_7)), kind
            ),
            415,
            "UnsupportedMediaType",
            message=kind,
            seed="rsp",
        )
        for kind in ("text/plain", "application/merge-patch+json")
    ],
    # -- wrong JSON types ----------------------------------------------------------
    Case(
        "priority-is-a-string",
        lambda n, _: post(RSP, rsp(n, priority="high")),
        422,
        "Invalid",
        "spec.devices.priority",
    ),
    Case(
        "attribute-int-is-a-string",
        lambda n, _: post(RSP, rsp(n, attributes={"gpu.example.com/mem": {"int": "x"}})),
        422,
        "Invalid",
        "spec.devices.attributes[gpu.example.com/mem].int",
    ),
    Case(
        "spec-is-a-string",
        lambda n, _: post(RSP, edited(rsp(n), lambda o: o.update(spec="devices"))),
        422,
        "Invalid",
        "spec",
    ),
    Case(
        "labels-is-a-list",
        lambda n, _: post(RSP, edited(rsp(n), lambda o: o["metadata"].update(labels=["a=b"]))),
        422,
        "Invalid",
        "metadata.labels",
    ),
    Case(
        "metadata-is-a-string",
        lambda n, _: post(RSP, edited(rsp(n), lambda o: o.update(metadata=n))),
        422,
        "Invalid",
        "metadata",
    ),
    # -- device rules --------------------------------------------------------------
    Case(
        "attribute-without-domain",
        lambda n, _: post(RSP, rsp(n, attributes={"model": {"string": "a100"}})),
        422,
        "Invalid",
        "spec.devices.attributes[model]",
    ),
    Case(
        "attribute-with-two-values",
        lambda n, _: post(RSP, rsp(n, attributes={"gpu.example.com/x": {"int": 1, "bool": True}})),
        422,
        "Invalid",
        "spec.devices.attributes[gpu.example.com/x]",
    ),
    Case(
        "33-attributes-and-capacities",
        lambda n, _: post(RSP, rsp(n, attributes=_attrs(20), capacity=_caps(13))),
        422,
        "Invalid",
        "spec.devices",
    ),
    Case(
        "version-not-semver",
        lambda n, _: post(RSP, rsp(n, attributes={"gpu.example.com/fw": {"version": "1.2"}})),
        422,
        "Invalid",
        "spec.devices.attributes[gpu.example.com/fw].version",
    ),
    Case(
        "string-attribute-over-64-bytes",
        lambda n, _: post(RSP, rsp(n, attributes={"gpu.example.com/s": {"string": "é" * 33}})),
        422,
        "Invalid",
        "spec.devices.attributes[gpu.example.com/s].string",
    ),
    Case(
        "selector-without-cel",
        lambda n, _: post(RSP, rsp(n, filter={"selectors": [{}]})),
        422,
        "Invalid",
        "spec.devices.filter.selectors[0].cel",
    ),
    *[
        Case(
            f"selector-of-type-{kind}",
            lambda n, _, expression=expression: post(
                RSP, rsp(n, filter={"selectors": [{"cel": {"expression": expression}}]})
            ),
            422,
            "Invalid",
            "spec.devices.filter.selectors[0].cel.expression",
            message="must evaluate to bool",
        )
        for kind, expression in (
            ("string", "device.driver"),
            ("quantity", 'device.capacity["gpu.example.com"].memory'),
        )
    ],
    # -- sizes ---------------------------------------------------------------------
    Case(
        "body-over-3MiB",
        lambda n, _: post(
            RSP, edited(rsp(n), lambda o: o["metadata"].update(annotations={"a": "x" * 4 * MIB}))
        ),
        413,
        "RequestEntityTooLarge",
    ),
    Case(
        "body-over-3MiB-chunked",
        lambda n, _: Req(
            "POST",
            RSP,
            orjson.dumps(
                edited(rsp(n), lambda o: o["metadata"].update(annotations={"a": "x" * 4 * MIB}))
            ),
            chunked=True,
        ),
        413,
        "RequestEntityTooLarge",
    ),
    Case(
        "annotations-over-256KiB",
        lambda n, _: post(
            RSP, edited(rsp(n), lambda o: o["metadata"].update(annotations={"a": "x" * 300 * 1024}))
        ),
        422,
        "Invalid",
        "metadata.annotations",
    ),
    # -- nesting -------------------------------------------------------------------
    Case(
        "yaml-nested-100000-deep",
        lambda n, _: Req(
            "POST",
            RSP,
            f"apiVersion: {RSP_GV}\nkind: ResourceSlicePatch\nmetadata: {{name: {n}}}\n".encode()
            + b"spec: {devices: {bogus: "
            + b"[" * 100_000
            + b"]" * 100_000
            + b"}}\n",
            "application/yaml",
        ),
        400,
        "BadRequest",
        message="nested",
    ),
    Case(
        "json-nested-500-deep",
        lambda n, _: Req("POST", RSP, _nested(rsp(n), 500)),
        400,
        "BadRequest",
        message="nested",
    ),
    Case(
        "merge-patch-nested-500-deep",
        lambda n, _: patch(RSP, n, _nested({"metadata": {"labels": {"a": "b"}}}, 500), MERGE),
        400,
        "BadRequest",
        message="nested",
        seed="rsp",
    ),
    Case(
        "json-patch-value-nested-500-deep",
        lambda n, _: patch(
            RSP,
            n,
            b'[{"op":"add","path":"/spec/devices/bogus","value":' + b"[" * 500 + b"]" * 500 + b"}]",
            JSON_PATCH,
        ),
        400,
        "BadRequest",
        message="nested",
        seed="rsp",
    ),
    # -- names ---------------------------------------------------------------------
    Case(
        "name-uppercase",
        lambda n, _: post(RSP, rsp(n.upper())),
        422,
        "Invalid",
        "metadata.name",
    ),
    Case(
        "name-underscore",
        lambda n, _: post(RSP, rsp(n.replace("-", "_"))),
        422,
        "Invalid",
        "metadata.name",
    ),
    Case(
        "name-254-chars",
        lambda n, _: post(RSP, rsp((n + "a" * 254)[:254])),
        422,
        "Invalid",
        "metadata.name",
    ),
    Case(
        "name-empty-without-generateName",
        lambda n, _: post(RSP, rsp("")),
        422,
        "Invalid",
        "metadata.name",
    ),
    # -- type meta and identity ----------------------------------------------------
    Case(
        "kind-mismatch",
        lambda n, _: post(
            RSP, edited(rsp(n), lambda o: o.update(kind="ResourcePoolStatusRequest"))
        ),
        400,
        "BadRequest",
        message="kind",
    ),
    Case(
        "apiVersion-mismatch",
        lambda n, _: post(RSP, edited(rsp(n), lambda o: o.update(apiVersion=RPSR_GV))),
        400,
        "BadRequest",
        message=RPSR_GV,
    ),
    Case(
        "put-name-differs-from-url",
        lambda n, seed: Req(
            "PUT",
            f"{RSP}/{n}",
            orjson.dumps(edited(seed, lambda o: o["metadata"].update(name=n + "-other"))),
        ),
        400,
        "BadRequest",
        message="does not match",
        seed="rsp",
    ),
    # -- ResourcePoolStatusRequest -------------------------------------------------
    Case(
        "rpsr-put-spec-change",
        lambda n, seed: put(RPSR, edited(seed, lambda o: o["spec"].update(driver="b.example.com"))),
        422,
        "Invalid",
        "spec",
        "field is immutable",
        seed="rpsr",
    ),
    Case(
        "rpsr-merge-patch-spec-change",
        lambda n, _: patch(RPSR, n, b'{"spec":{"limit":5}}', MERGE),
        422,
        "Invalid",
        "spec",
        "field is immutable",
        seed="rpsr",
    ),
    Case(
        "rpsr-missing-driver",
        lambda n, _: post(RPSR, rpsr(n, poolName="pool-a")),
        422,
        "Invalid",
        "spec.driver",
        "Required value",
    ),
    Case(
        "rpsr-limit-0",
        lambda n, _: post(RPSR, rpsr(n, driver="gpu.example.com", limit=0)),
        422,
        "Invalid",
        "spec.limit",
    ),
    Case(
        "rpsr-limit-1001",
        lambda n, _: post(RPSR, rpsr(n, driver="gpu.example.com", limit=1001)),
        422,
        "Invalid",
        "spec.limit",
    ),
    # -- concurrency and existence -------------------------------------------------
    Case(
        "put-stale-resourceVersion",
        lambda n, seed: put(RSP, edited(seed, _stale_rv)),
        409,
        "Conflict",
        seed="rsp",
    ),
    Case(
        "put-without-resourceVersion",
        lambda n, seed: put(RSP, edited(seed, _without_rv)),
        422,
        "Invalid",
        "metadata.resourceVersion",
        seed="rsp",
    ),
    Case(
        "put-numeric-resourceVersion",
        lambda n, seed: put(RSP, edited(seed, _numeric_rv)),
        422,
        "Invalid",
        "metadata.resourceVersion",
        seed="rsp",
    ),
    Case(
        "merge-patch-changes-uid",
        lambda n, _: patch(
            RSP, n, b'{"metadata":{"uid":"not-the-uid"}}', "application/merge-patch+json"
        ),
        422,
        "Invalid",
        "metadata.uid",
        seed="rsp",
    ),
    Case(
        "delete-propagationPolicy-not-a-string",
        lambda n, _: Req("DELETE", f"{RSP}/{n}", b'{"propagationPolicy": []}'),
        400,
        "BadRequest",
        "propagationPolicy",
        seed="rsp",
    ),
    Case(
        "delete-dryRun-not-a-list",
        lambda n, _: Req("DELETE", f"{RSP}/{n}", b'{"dryRun": "All"}'),
        400,
        "BadRequest",
        "dryRun",
        seed="rsp",
    ),
    Case(
        "create-existing-name",
        lambda n, _: post(RSP, rsp(n, priority=9)),
        409,
        "AlreadyExists",
        seed="rsp",
    ),
    # -- patches -------------------------------------------------------------------
    Case(
        "unknown-patch-type",
        lambda n, _: patch(RSP, n, b'{"spec":{"devices":{"priority":5}}}', "application/cbor-seq"),
        415,
        "UnsupportedMediaType",
        seed="rsp",
    ),
    Case(
        "strategic-merge-patch-bad-directive",
        lambda n, _: patch(
            RSP, n, b'{"spec":{"$patch":"explode"}}', "application/strategic-merge-patch+json"
        ),
        400,
        "BadRequest",
        message="$patch",
        seed="rsp",
    ),
    Case(
        "json-patch-failing-test-op",
        lambda n, _: patch(
            RSP,
            n,
            b'[{"op":"test","path":"/spec/devices/priority","value":99},'
            b'{"op":"replace","path":"/spec/devices/priority","value":5}]',
            JSON_PATCH,
        ),
        422,
        "Invalid",
        seed="rsp",
    ),
    Case(
        "apply-without-fieldManager",
        lambda n, _: patch(
            RSP,
            n,
            f"apiVersion: {RSP_GV}\nkind: ResourceSlicePatch\nmetadata: {{name: {n}}}\n"
            "spec: {devices: {priority: 5}}\n".encode(),
            APPLY,
        ),
        422,
        "Invalid",
        "fieldManager",
        seed="rsp",
    ),
    Case(
        "force-on-merge-patch",
        lambda n, _: patch(RSP, n, b'{"spec":{"devices":{"priority":5}}}', MERGE, force="true"),
        422,
        "Invalid",
        "force",
        seed="rsp",
    ),
    # -- query parameters ----------------------------------------------------------
    Case(
        "bad-label-selector",
        lambda n, _: Req("GET", RSP, params={"labelSelector": "app in (a"}),
        400,
        "BadRequest",
    ),
    Case(
        "unsupported-field-selector",
        lambda n, _: Req("GET", RSP, params={"fieldSelector": "spec.devices.priority=1"}),
        400,
        "BadRequest",
        message="spec.devices.priority",
    ),
    Case(
        "invalid-dryRun-value",
        lambda n, _: post(RSP, rsp(n), dryRun="Yes"),
        400,
        "BadRequest",
        message="dryRun",
    ),
    Case(
        "bad-fieldValidation-value",
        lambda n, _: post(RSP, rsp(n), fieldValidation="Loose"),
        400,
        "BadRequest",
        message="fieldValidation",
    ),
    Case(
        "invalid-resourceVersion-on-list",
        lambda n, _: Req("GET", RSP, params={"resourceVersion": "abc"}),
        400,
        "BadRequest",
        message="abc",
    ),
    *[
        Case(
            f"query-{param}-{value}",
            lambda n, _, param=param, value=value, extra=extra: Req(
                "GET", RSP, params={param: value, **extra}
            ),
            400,
            "BadRequest",
            message=param,
        )
        for param, value, extra in (
            ("watch", "maybe", {}),
            ("limit", "99999999999999999999999", {}),
            ("limit", "-1", {}),
            ("limit", "1.5", {}),
            ("limit", "ten", {}),
            ("timeoutSeconds", "abc", {"watch": "true"}),
            ("timeoutSeconds", "-5", {"watch": "true"}),
            ("timeoutSeconds", "0.5", {"watch": "true"}),
            ("timeoutSeconds", "abc", {}),
            ("allowWatchBookmarks", "yes please", {"watch": "true"}),
        )
    ],
    # -- answers the client cannot take are refused before anything is stored -------
    Case(
        "create-accepting-only-html",
        lambda n, _: Req("POST", RSP, orjson.dumps(rsp(n)), accept="text/html"),
        406,
        "NotAcceptable",
    ),
    Case(
        "create-as-table-with-bad-includeObject",
        lambda n, _: Req(
            "POST",
            RSP,
            orjson.dumps(rsp(n)),
            params={"includeObject": "Everything"},
            accept="application/json;as=Table;v=v1;g=meta.k8s.io",
        ),
        400,
        "BadRequest",
        message="includeObject",
    ),
    Case(
        "update-accepting-only-html",
        lambda n, seed: Req(
            "PUT", f"{RSP}/{n}", orjson.dumps(edited(seed, _set_priority_7)), accept="text/html"
        ),
        406,
        "NotAcceptable",
        seed="rsp",
    ),
    Case(
        "merge-patch-accepting-only-html",
        lambda n, _: Req(
            "PATCH",
            f"{RSP}/{n}",
            b'{"spec":{"devices":{"priority":5}}}',
            MERGE,
            accept="text/html",
        ),
        406,
        "NotAcceptable",
        seed="rsp",
    ),
    # -- routing -------------------------------------------------------------------
    Case(
        "unknown-subresource",
        lambda n, seed: Req("PUT", f"{RSP}/{n}/scale", orjson.dumps(seed)),
        404,
        "NotFound",
        seed="rsp",
    ),
    Case(
        "post-to-item-url",
        lambda n, seed: Req("POST", f"{RSP}/{n}", orjson.dumps(seed)),
        405,
        "MethodNotAllowed",
        seed="rsp",
    ),
    Case(
        "unknown-group-version",
        lambda n, _: post("/apis/resource.k8s.io/v9/resourceslicepatches", rsp(n)),
        404,
        "NotFound",
    ),
    Case("unsupported-http-method", lambda n, _: Req("OPTIONS", RSP), 405, "MethodNotAllowed"),
]


# -- tests ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_request_is_a_status_and_changes_nothing(client: httpx.Client, case: Case) -> None:
    """The bad request is answered with the right Status, and nothing stored changed."""
    name = unique("bad")
    urls: list[str] = []
    target: dict[str, Any] = {}
    if case.seed is not None:
        url, target = seed(client, case.seed, name)
        urls.append(url)
    before = snapshot(client, urls)

    resp = case.build(name, target).send(client)

    assert_status(resp, case.code, case.reason, case.field, case.message)
    if case.reason in ("Conflict", "AlreadyExists"):
        plural = RSP.rsplit("/", 1)[1] if case.seed == "rsp" else RPSR.rsplit("/", 1)[1]
        details = resp.json()["details"]
        assert details == {"name": name, "group": "resource.k8s.io", "kind": plural}
    assert snapshot(client, urls) == before


def test_strict_names_every_unknown_field(client: httpx.Client) -> None:
    """Strict rejects with every unknown field named, at any depth, and stores nothing."""
    name = unique("strict")
    obj = rsp(name, priority=1, bogus=True)
    obj["metadata"]["colour"] = "red"
    obj["spec"]["devices"]["attributes"] = {"gpu.example.com/x": {"int": 1, "float": 1.5}}
    before = snapshot(client)

    resp = post(RSP, obj, fieldValidation="Strict").send(client)

    assert_status(resp, 400, "BadRequest")
    message = resp.json()["message"]
    for path in (
        "metadata.colour",
        "spec.devices.bogus",
        "spec.devices.attributes[gpu.example.com/x].float",
    ):
        assert path in message
    assert snapshot(client) == before


def test_unknown_field_with_warn_is_stored_without_it(client: httpx.Client) -> None:
    """Warn creates the object, names the field in a Warning header and drops the field."""
    name = unique("warn")
    resp = post(RSP, rsp(name, priority=3, bogus=True), fieldValidation="Warn").send(client)

    assert resp.status_code == 201, resp.text
    warnings = resp.headers.get_list("warning")
    assert any("spec.devices.bogus" in w and w.startswith("299 ") for w in warnings), warnings
    stored = client.get(f"{RSP}/{name}").json()
    assert stored["spec"]["devices"] == {"priority": 3}
    assert resp.json() == stored


def test_unknown_field_by_default_warns(client: httpx.Client) -> None:
    """Without fieldValidation the server warns about unknown fields, as kube-apiserver does."""
    name = unique("default")
    resp = post(RSP, rsp(name, priority=3, bogus=True)).send(client)

    assert resp.status_code == 201, resp.text
    assert any("spec.devices.bogus" in w for w in resp.headers.get_list("warning"))
    assert "bogus" not in client.get(f"{RSP}/{name}").json()["spec"]["devices"]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda o: o["metadata"].update(name="a" * MIB), id="name"),
        pytest.param(lambda o: o["metadata"].update(labels={"a": "b" * MIB}), id="label-value"),
        pytest.param(lambda o: o["metadata"].update(labels={"b" * MIB: "a"}), id="label-key"),
        pytest.param(
            lambda o: o["spec"]["devices"].update(
                attributes={"gpu.example.com/s": {"string": "x" * MIB}}
            ),
            id="attribute-string",
        ),
        pytest.param(
            lambda o: o["spec"]["devices"].update(
                filter={"selectors": [{"cel": {"expression": "(" * (MIB // 2)}}]}
            ),
            id="cel-expression",
        ),
    ],
)
def test_error_does_not_echo_a_long_value(
    client: httpx.Client, change: Callable[[dict[str, Any]], None]
) -> None:
    """A 1 MiB bad value is shown shortened in the 422, not repeated in full."""
    before = snapshot(client)
    resp = post(RSP, edited(rsp(unique("long")), change)).send(client)

    assert_status(resp, 422, "Invalid")
    assert len(resp.content) < 64 * 1024, len(resp.content)
    assert not re.search(r"(.)\1{1023}", resp.text), "a long run of the value was echoed"
    assert snapshot(client) == before


@pytest.mark.parametrize("validation", [None, "Warn"])
@pytest.mark.parametrize("key", ["日", "a\x01b", 'quote"back\\slash', "é"])
def test_unknown_field_with_any_name_is_a_warning_not_a_failure(
    client: httpx.Client, validation: str | None, key: str
) -> None:
    """The object is stored and the answer says so (201), whatever the unknown field is
    called: its name is escaped into the Warning header, which stays printable ASCII."""
    name = unique("warn")
    obj = rsp(name, priority=2)
    obj["spec"]["devices"][key] = 1
    params = {"fieldValidation": validation} if validation else {}
    resp = client.post(
        RSP, content=orjson.dumps(obj), headers={"Content-Type": JSON}, params=params
    )

    assert resp.status_code == 201, resp.text
    warnings = [v for k, v in resp.headers.raw if k.lower() == b"warning"]
    assert len(warnings) == 1, resp.headers
    assert all(32 <= b < 127 for b in warnings[0]), warnings[0]
    assert warnings[0].startswith(b'299 - "unknown field \\"spec.devices.')
    assert client.get(f"{RSP}/{name}").json()["spec"]["devices"] == {"priority": 2}
    again = client.post(RSP, content=orjson.dumps(obj), headers={"Content-Type": JSON})
    assert again.status_code == 409  # it really was stored the first time


def test_create_without_content_type_is_read_as_json(client: httpx.Client) -> None:
    """No Content-Type means JSON, the first media type the server supports (as in Go)."""
    name = unique("no-type")
    resp = Req("POST", RSP, orjson.dumps(rsp(name, priority=4)), content_type=None).send(client)

    assert resp.status_code == 201, resp.text
    assert client.get(f"{RSP}/{name}").json()["spec"]["devices"]["priority"] == 4


def test_unknown_field_with_ignore_is_dropped_silently(client: httpx.Client) -> None:
    """Ignore creates the object without the field and without any warning."""
    name = unique("ignore")
    resp = post(RSP, rsp(name, priority=3, bogus=True), fieldValidation="Ignore").send(client)

    assert resp.status_code == 201, resp.text
    assert resp.headers.get_list("warning") == []
    stored = client.get(f"{RSP}/{name}").json()
    assert stored["spec"]["devices"] == {"priority": 3}
    assert resp.json() == stored


def test_strict_unknown_field_on_update_keeps_the_object(client: httpx.Client) -> None:
    """A Strict PUT and a Strict merge patch with an unknown field leave the object's bytes alone."""
    name = unique("strict-update")
    url, obj = seed(client, "rsp", name)
    before = snapshot(client, [url])
    body = edited(obj, lambda o: o["spec"]["devices"].update(priority=4, bogus=1))

    resp = put(RSP, body, fieldValidation="Strict").send(client)
    assert_status(resp, 400, "BadRequest", message="spec.devices.bogus")
    resp = patch(
        RSP, name, b'{"spec":{"devices":{"bogus":1}}}', MERGE, fieldValidation="Strict"
    ).send(client)
    assert_status(resp, 400, "BadRequest", message="spec.devices.bogus")

    assert snapshot(client, [url]) == before


def test_invalid_status_write_keeps_the_object(client: httpx.Client) -> None:
    """A status write with a negative count is 422 at the field, and the object is unchanged."""
    name = unique("status")
    url, _ = seed(client, "rsp", name)
    before = snapshot(client, [url])

    resp = patch(RSP, f"{name}/status", b'{"status":{"matchedDevices":-1}}', MERGE).send(client)

    assert_status(resp, 422, "Invalid", "status.matchedDevices")
    assert snapshot(client, [url]) == before


def test_dry_run_of_a_valid_create_stores_nothing(client: httpx.Client) -> None:
    """dryRun=All answers like a create but stores nothing (the control for the cases above)."""
    name = unique("dry")
    before = snapshot(client)

    resp = post(RSP, rsp(name), dryRun="All").send(client)

    assert resp.status_code == 201, resp.text
    assert resp.json()["metadata"]["name"] == name
    assert snapshot(client) == before
    assert_status(client.get(f"{RSP}/{name}"), 404, "NotFound")


async def test_server_keeps_answering_after_all_bad_input(own_server: ServerProcess) -> None:
    """Every bad request at once gets a Status; then /readyz is ok and a normal create works."""
    async with own_server.async_client() as aclient:
        seeds: dict[str, dict[str, Any]] = {}
        for case in CASES:
            if case.seed is not None:
                name = unique("burst")
                path, obj = (RSP, rsp(name)) if case.seed == "rsp" else (RPSR, rpsr(name))
                resp = await aclient.post(path, json=obj)
                assert resp.status_code == 201, resp.text
                seeds[case.id] = resp.json()

        def name_for(case: Case) -> str:
            return str(seeds[case.id]["metadata"]["name"]) if case.id in seeds else unique("burst")

        requests = [(case, case.build(name_for(case), seeds.get(case.id, {}))) for case in CASES]
        responses = await asyncio.gather(*(req.send_async(aclient) for _, req in requests))
        for (case, _), resp in zip(requests, responses, strict=True):
            assert_status(resp, case.code, case.reason, case.field, case.message)

        ready = await aclient.get("/readyz")
        assert ready.status_code == 200
        assert ready.text == "ok"
        name = unique("after")
        created = await aclient.post(RSP, json=rsp(name))
        assert created.status_code == 201, created.text
        assert (await aclient.get(f"{RSP}/{name}")).json() == created.json()


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("OPTIONS", RSP, "DELETE, GET, POST"),
        ("PUT", RSP, "DELETE, GET, POST"),
        ("POST", f"{RSP}/x", "DELETE, GET, PATCH, PUT"),
        ("OPTIONS", f"{RSP}/x", "DELETE, GET, PATCH, PUT"),
        ("DELETE", f"{RPSR}/x/status", "GET, PATCH, PUT"),
        ("POST", "/apis/resource.k8s.io/v1alpha3/devices", "GET"),
        ("DELETE", "/apis", "GET, HEAD"),
        ("POST", "/version", "GET, HEAD"),
    ],
)
def test_method_not_allowed_says_what_is(
    client: httpx.Client, method: str, path: str, allow: str
) -> None:
    """A 405 carries an Allow header with the methods the URL takes (RFC 9110)."""
    resp = client.request(method, path)
    assert_status(resp, 405, "MethodNotAllowed")
    assert sorted(m.strip() for m in resp.headers["allow"].split(",")) == allow.split(", ")


def test_status_bodies_are_not_framework_errors(client: httpx.Client) -> None:
    """Paths outside the API and odd methods still answer with a Status, never a bare error."""
    for method, path, code in (
        ("GET", "/no/such/path", 404),
        ("GET", f"{RSP}/", 404),
        ("DELETE", "/apis", 405),
        ("PUT", RSP, 405),
        ("GET", f"{RSP}/a/status/extra", 404),
    ):
        resp = client.request(method, path)
        assert resp.status_code == code, (method, path, resp.text)
        body = resp.json()
        assert body["kind"] == "Status", (method, path, body)
        assert body["status"] == "Failure"
        assert body["code"] == code
        assert "detail" not in body

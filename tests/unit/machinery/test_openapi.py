"""OpenAPI v2 and v3 documents: GVK extensions, patch types, parameters and resolvable references."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from apiserver.api.resource import ResourceSlicePatch
from apiserver.kinds import strategies
from apiserver.machinery import (
    APPLY_PATCH,
    JSON_PATCH,
    STRATEGIC_MERGE_PATCH,
    ResourceType,
    ServedKind,
    v2_document,
    v3_document,
)
from apiserver.machinery import encode_openapi as encode
from apiserver.machinery.openapi import _plain_refs
from apiserver.toolkit import MERGE_PATCH

SERVED = [
    ServedKind(s.resource, s.model, s.has_status, s.create_rate_limited) for s in strategies()
]
WRITABLE = [k for k in SERVED if "patch" in k.resource.verbs]
V3 = v3_document(SERVED, "test")
V2 = v2_document(SERVED, "test")
V3_SCHEMAS: dict[str, Any] = V3["components"]["schemas"]
V2_SCHEMAS: dict[str, Any] = V2["definitions"]


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for verb, op in item.items():
            if verb != "parameters":
                yield path, verb, op


def gvks(schemas: dict[str, Any]) -> list[dict[str, str]]:
    return [g for s in schemas.values() for g in s.get("x-kubernetes-group-version-kind", [])]


@pytest.mark.parametrize(("doc", "base"), [(V3, "#/components/schemas/"), (V2, "#/definitions/")])
def test_every_ref_resolves(doc: dict[str, Any], base: str) -> None:
    schemas = doc["components"]["schemas"] if "components" in doc else doc["definitions"]
    found = list(refs(doc))
    assert found
    for ref in found:
        assert ref.startswith(base), ref
        assert ref[len(base) :] in schemas, ref


@pytest.mark.parametrize("schemas", [V3_SCHEMAS, V2_SCHEMAS])
def test_every_served_kind_and_list_has_its_gvk(schemas: dict[str, Any]) -> None:
    declared = gvks(schemas)
    for kind in SERVED:
        r = kind.resource
        assert {"group": r.group, "version": r.version, "kind": r.kind} in declared
        assert {"group": r.group, "version": r.version, "kind": r.list_kind} in declared


def test_kind_schema_is_named_and_shaped_like_kubernetes() -> None:
    rsp = V3_SCHEMAS["io.k8s.api.resource.v1alpha3.ResourceSlicePatch"]
    assert rsp["x-kubernetes-group-version-kind"] == [
        {"group": "resource.k8s.io", "version": "v1alpha3", "kind": "ResourceSlicePatch"}
    ]
    assert rsp["required"] == ["spec"]
    metadata = rsp["properties"]["metadata"]
    assert metadata.get("$ref", metadata.get("allOf", [{}])[0].get("$ref")) == (
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    )
    assert rsp["properties"]["spec"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.resource.v1alpha3.ResourceSlicePatchSpec"}
    ]
    status = V3_SCHEMAS["io.k8s.api.resource.v1alpha3.ResourceSlicePatchStatus"]
    conditions = status["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert status["properties"]["matchedDevices"] == {
        "type": "integer",
        "format": "int64",
        "description": "Number of devices the patch currently applies to.",
    }
    capacity = V3_SCHEMAS["io.k8s.api.resource.v1alpha3.DeviceCapacity"]
    assert capacity["properties"]["value"] == {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}],
        "description": "Value defines how much of a certain capacity that device has.",
    }
    lst = V3_SCHEMAS["io.k8s.api.resource.v1alpha3.ResourceSlicePatchList"]
    assert lst["properties"]["items"]["items"] == {
        "$ref": "#/components/schemas/io.k8s.api.resource.v1alpha3.ResourceSlicePatch"
    }


def nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from nodes(value)


@pytest.mark.parametrize("schemas", [V3_SCHEMAS, V2_SCHEMAS])
def test_no_schema_keeps_pydantic_leftovers(schemas: dict[str, Any]) -> None:
    for node in nodes(schemas):
        assert "title" not in node
        assert "$defs" not in node
        assert {"type": "null"} not in node.get("anyOf", [])
        assert node.get("default", "unset") is not None


def test_v3_refs_take_no_siblings() -> None:
    for node in nodes(V3_SCHEMAS):
        if "$ref" in node:
            assert list(node) == ["$ref"]  # siblings of $ref go through allOf


def test_v2_fields_refer_with_a_plain_ref_and_their_description_beside_it() -> None:
    """kube-apiserver's own v2 shape, the one kubectl 1.28 reads: no allOf anywhere."""
    plain = [node for node in nodes(V2) if "$ref" in node and "description" in node]
    assert plain  # the fields that v3 writes through allOf
    for node in nodes(V2):
        assert "allOf" not in node
        if "$ref" in node:
            assert set(node) <= {"$ref", "description"}
    rsp = V2_SCHEMAS["io.k8s.api.resource.v1alpha3.ResourceSlicePatch"]
    spec = rsp["properties"]["spec"]
    assert spec["$ref"] == "#/definitions/io.k8s.api.resource.v1alpha3.ResourceSlicePatchSpec"
    assert (
        spec["description"]
        == V3_SCHEMAS["io.k8s.api.resource.v1alpha3.ResourceSlicePatch"]["properties"]["spec"][
            "description"
        ]
    )
    capacity = V2_SCHEMAS["io.k8s.api.resource.v1alpha3.DeviceCapacity"]
    assert capacity["properties"]["value"] == {
        "$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity",
        "description": "Value defines how much of a certain capacity that device has.",
    }


@pytest.mark.parametrize(
    "field",
    [
        # siblings that shape the value: the allOf is what combines them with the reference
        {"allOf": [{"$ref": "#/definitions/A"}], "type": "object", "description": "d"},
        {"allOf": [{"$ref": "#/definitions/A"}, {"$ref": "#/definitions/B"}]},
        {"allOf": [{"$ref": "#/definitions/A", "description": "inner"}]},
    ],
)
def test_v2_keeps_an_allof_that_a_plain_ref_cannot_say(field: dict[str, Any]) -> None:
    assert _plain_refs({"definitions": {"X": {"properties": {"f": field}}}}) == {
        "definitions": {"X": {"properties": {"f": field}}}
    }


def test_v2_plain_refs_leave_data_and_field_names_alone() -> None:
    wrapped = {"allOf": [{"$ref": "#/definitions/A"}], "description": "d"}
    schema = {
        "properties": {"allOf": {"type": "string"}, "default": wrapped},
        "default": {"allOf": [{"$ref": "x"}]},
        "x-kubernetes-example": wrapped,
    }
    assert _plain_refs(schema) == {
        "properties": {
            "allOf": {"type": "string"},
            "default": {"$ref": "#/definitions/A", "description": "d"},
        },
        "default": {"allOf": [{"$ref": "x"}]},
        "x-kubernetes-example": wrapped,
    }


def test_v3_patch_operations_declare_patch_types_and_field_validation() -> None:
    patches = [(p, op) for p, verb, op in operations(V3) if verb == "patch"]
    # the object, and its status where it has one
    assert len(patches) == sum(2 if k.has_status else 1 for k in WRITABLE)
    for path, op in patches:
        assert list(op["requestBody"]["content"]) == [
            JSON_PATCH,
            MERGE_PATCH,
            STRATEGIC_MERGE_PATCH,
            APPLY_PATCH,
        ], path
        names = [p["name"] for p in op["parameters"]]
        assert {"fieldValidation", "fieldManager", "dryRun", "force"} <= set(names), path


def test_v2_patch_operations_declare_patch_types_and_field_validation() -> None:
    patches = [(p, op) for p, verb, op in operations(V2) if verb == "patch"]
    assert len(patches) == sum(2 if k.has_status else 1 for k in WRITABLE)
    for path, op in patches:
        assert op["consumes"] == [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH], path
        names = [p["name"] for p in op["parameters"]]
        assert "fieldValidation" in names
        [body] = [p for p in op["parameters"] if p["in"] == "body"]
        assert body["schema"]["$ref"].startswith("#/definitions/")


def test_lists_that_merge_carry_their_patch_strategy() -> None:
    """Keyed lists advertise merge on their key; atomic lists advertise nothing."""
    schemas = V3["components"]["schemas"]
    status = schemas["io.k8s.api.resource.v1alpha3.ResourceSlicePatchStatus"]["properties"]
    assert status["conditions"]["x-kubernetes-patch-strategy"] == "merge"
    assert status["conditions"]["x-kubernetes-patch-merge-key"] == "type"
    flt = schemas["io.k8s.api.resource.v1alpha3.DevicePatchFilter"]["properties"]
    assert "x-kubernetes-patch-strategy" not in flt["selectors"]


def test_every_write_declares_field_validation() -> None:
    for doc in (V2, V3):
        for path, verb, op in operations(doc):
            if verb in ("post", "put", "patch"):
                assert "fieldValidation" in [p["name"] for p in op["parameters"]], (path, verb)


def test_operations_carry_action_and_gvk() -> None:
    actions = {}
    for path, verb, op in operations(V3):
        actions[(path, verb)] = op["x-kubernetes-action"]
        assert op["x-kubernetes-group-version-kind"]["kind"] in {k.resource.kind for k in SERVED}
        assert op["operationId"]
    base = "/apis/resource.k8s.io/v1alpha3/resourceslicepatches"
    assert actions[(base, "get")] == "list"
    assert actions[(base, "post")] == "post"
    assert actions[(base, "delete")] == "deletecollection"
    assert actions[(base + "/{name}", "get")] == "get"
    assert actions[(base + "/{name}", "put")] == "put"
    assert actions[(base + "/{name}", "patch")] == "patch"
    assert actions[(base + "/{name}", "delete")] == "delete"
    assert actions[(base + "/{name}/status", "put")] == "put"
    op_ids = [op["operationId"] for _, _, op in operations(V3)]
    assert len(op_ids) == len(set(op_ids))


def test_namespaced_kind_gets_namespace_paths() -> None:
    claims = ResourceType(
        "example.io", "v1", "Claim", "claims", "claim", namespaced=True, short_names=()
    )
    doc = v3_document([ServedKind(claims, ResourceSlicePatch, True)], "test")
    assert sorted(doc["paths"]) == [
        "/apis/example.io/v1/claims",
        "/apis/example.io/v1/namespaces/{namespace}/claims",
        "/apis/example.io/v1/namespaces/{namespace}/claims/{name}",
        "/apis/example.io/v1/namespaces/{namespace}/claims/{name}/status",
    ]
    assert list(doc["paths"]["/apis/example.io/v1/claims"]) == ["get"]
    item = doc["paths"]["/apis/example.io/v1/namespaces/{namespace}/claims/{name}"]
    assert [p["name"] for p in item["parameters"]] == ["name", "namespace"]
    assert item["get"]["operationId"] == "readNamespacedClaim"


def test_a_read_only_kind_has_only_get_operations() -> None:
    base = "/apis/resource.k8s.io/v1alpha3/devices"
    for doc in (V2, V3):
        assert sorted(p for p in doc["paths"] if p.startswith(base)) == [base, base + "/{name}"]
        assert [v for v in doc["paths"][base] if v != "parameters"] == ["get"]
        assert [v for v in doc["paths"][base + "/{name}"] if v != "parameters"] == ["get"]
    device = V3["components"]["schemas"]["io.k8s.api.resource.v1alpha3.Device"]
    assert device["x-kubernetes-group-version-kind"] == [
        {"group": "resource.k8s.io", "version": "v1alpha3", "kind": "Device"}
    ]


def test_encode_is_deterministic_with_its_hash() -> None:
    body, digest = encode(V3)
    again, digest_again = encode(v3_document(SERVED, "test"))
    assert body == again
    assert digest == digest_again == hashlib.sha512(body).hexdigest().upper()
    assert orjson.loads(body) == V3


EXPECTED_CODES = {
    "get": {"200", "400", "401", "403", "404", "406"},
    "list": {"200", "400", "401", "403", "404", "406", "410", "422"},
    "post": {"201", "400", "401", "403", "404", "406", "409", "413", "415", "422"},
    "put": {"200", "400", "401", "403", "404", "406", "409", "413", "415", "422"},
    "patch": {"200", "201", "400", "401", "403", "404", "406", "409", "413", "415", "422"},
    "delete": {"200", "400", "401", "403", "404", "406", "409", "413", "415", "422"},
    "deletecollection": {"200", "400", "401", "403", "404", "406", "410", "413", "415", "422"},
}


@pytest.mark.parametrize(("doc", "version"), [(V3, "v3"), (V2, "v2")])
def test_every_operation_lists_the_errors_it_returns(doc: dict[str, Any], version: str) -> None:
    for path, verb, op in operations(doc):
        codes = set(op["responses"])
        expected = set(EXPECTED_CODES[op["x-kubernetes-action"]])
        if op["x-kubernetes-action"] == "post" and "resourcepoolstatusrequests" in path:
            expected.add("429")  # the per-user creation limit
        assert codes == expected, (version, path, verb)
        for code in codes - {"200", "201"}:
            response = op["responses"][code]
            assert response["description"], (path, verb, code)
            schema = (
                response["schema"]
                if version == "v2"
                else (response["content"]["application/json"]["schema"])
            )
            assert schema["$ref"].endswith("io.k8s.apimachinery.pkg.apis.meta.v1.Status")


def test_a_kind_served_in_two_versions_is_documented_in_both() -> None:
    """ResourcePoolStatusRequest: stored as v1alpha1, served as v1alpha3 too. Each version
    has its schemas and paths; operation ids stay unique (the converted version names
    itself); a delete answers with the deleted object, as upstream's does."""
    rpsr_gvks = {
        (g["version"], g["kind"]) for g in gvks(V3_SCHEMAS) if g["kind"].startswith("ResourcePoolS")
    }
    assert rpsr_gvks == {
        ("v1alpha1", "ResourcePoolStatusRequest"),
        ("v1alpha1", "ResourcePoolStatusRequestList"),
        ("v1alpha3", "ResourcePoolStatusRequest"),
        ("v1alpha3", "ResourcePoolStatusRequestList"),
    }
    v3_status = V3_SCHEMAS["io.k8s.api.resource.v1alpha3.ResourcePoolStatusRequestStatus"]
    assert "poolCount" in v3_status["properties"]
    assert "totalMatchingPools" not in v3_status["properties"]
    base = "/apis/resource.k8s.io/{}/resourcepoolstatusrequests"
    ids = {
        version: V3["paths"][base.format(version)]["get"]["operationId"]
        for version in ("v1alpha1", "v1alpha3")
    }
    assert ids == {
        "v1alpha1": "listResourcePoolStatusRequest",
        "v1alpha3": "listV1alpha3ResourcePoolStatusRequest",
    }
    deleted = V3["paths"][base.format("v1alpha3") + "/{name}"]["delete"]["responses"]["200"]
    assert deleted["content"]["application/json"]["schema"]["$ref"].endswith(
        "io.k8s.api.resource.v1alpha3.ResourcePoolStatusRequest"
    )

"""The protobuf OpenAPI v2 document: gnostic's field numbers, read back from the wire."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from apiserver.api.protobuf import fields_of
from apiserver.kinds import strategies
from apiserver.machinery import ServedKind, v2_document
from apiserver.machinery import encode_openapi_v2_protobuf as encode_document

V2 = v2_document(
    [ServedKind(s.resource, s.model, s.has_status, s.create_rate_limited) for s in strategies()],
    "test",
)
WIRE = encode_document(V2)


def field(data: bytes, number: int) -> list[Any]:
    return [value for n, value in fields_of(data) if n == number]


def one(data: bytes, number: int) -> Any:
    [value] = field(data, number)
    return value


def named(data: bytes, number: int) -> dict[str, bytes]:
    """gnostic's ordered Named* pairs (name = 1, value = 2) as a dict."""
    return {one(pair, 1).decode(): one(pair, 2) for pair in field(data, number)}


def extensions(data: bytes, number: int) -> dict[str, Any]:
    return {name: orjson.loads(one(value, 2)) for name, value in named(data, number).items()}


def test_the_document_carries_version_info_and_every_path() -> None:
    assert one(WIRE, 1) == b"2.0"  # swagger
    assert one(one(WIRE, 2), 1) == b"test"  # info.title
    paths = named(one(WIRE, 8), 2)
    assert list(paths) == list(V2["paths"])


def test_a_patch_operation_names_its_kind_and_field_validation() -> None:
    """What kubectl reads to decide whether the server validates fields (the parameters of
    a PATCH operation tagged with the kind)."""
    item = named(one(WIRE, 8), 2)["/api/v1/namespaces/{name}"]
    patch = one(item, 8)
    gvk = extensions(patch, 13)["x-kubernetes-group-version-kind"]
    assert gvk == {"group": "", "version": "v1", "kind": "Namespace"}
    query_names = []
    for parameters_item in field(patch, 8):
        non_body = field(one(parameters_item, 1), 2)  # Parameter.non_body_parameter
        for query in (q for nb in non_body for q in field(nb, 3)):
            query_names.append(one(query, 4).decode())
            assert one(query, 2) == b"query"
    assert "fieldValidation" in query_names
    assert "dryRun" in query_names


def test_a_body_parameter_refers_to_its_definition() -> None:
    item = named(one(WIRE, 8), 2)["/apis/resource.k8s.io/v1alpha3/allocationreviews"]
    post = one(item, 4)
    bodies = [one(p, 1) for p in (one(i, 1) for i in field(post, 8)) if field(p, 1)]
    [body] = bodies
    assert one(body, 3) == b"body"
    assert one(body, 4) == 1  # required
    schema = one(body, 5)
    assert one(schema, 1).decode().endswith("AllocationReview")


def test_definitions_keep_types_properties_and_enums() -> None:
    definitions = named(one(WIRE, 9), 1)
    entry = definitions["io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry"]
    properties = named(one(entry, 25), 1)
    fields_type = properties["fieldsType"]
    assert field(one(fields_type, 22), 1) == [b"string"]  # TypeItem.value
    assert [orjson.loads(one(e, 2)) for e in field(fields_type, 20)] == ["FieldsV1"]


def test_a_field_refers_with_a_plain_ref_and_its_description() -> None:
    """The protobuf form has the JSON form's shape: Schema.$ref (1) and description (4)
    beside it, no allOf (24), which kubectl 1.28 does not follow."""
    definitions = named(one(WIRE, 9), 1)
    patch = definitions["io.k8s.api.resource.v1alpha3.ResourceSlicePatch"]
    spec = named(one(patch, 25), 1)["spec"]
    assert one(spec, 1) == b"#/definitions/io.k8s.api.resource.v1alpha3.ResourceSlicePatchSpec"
    assert one(spec, 4).decode().strip()
    assert field(spec, 24) == []


@pytest.mark.parametrize(
    ("schema", "number", "expected"),
    [
        ({"maxLength": 2**40}, 11, 2**40),
        ({"minimum": -1}, 9, b"\x00\x00\x00\x00\x00\x00\xf0\xbf"),  # a double, -1.0
        ({"uniqueItems": True}, 16, 1),
    ],
)
def test_scalars_take_their_wire_types(schema: dict[str, Any], number: int, expected: Any) -> None:
    document = {"definitions": {"x": schema}}
    encoded = one(one(one(encode_document(document), 9), 1), 2)
    assert one(encoded, number) == expected


def test_a_keyword_the_encoder_does_not_know_is_an_error_not_a_loss() -> None:
    with pytest.raises(KeyError):
        encode_document({"definitions": {"x": {"oneOf": []}}})

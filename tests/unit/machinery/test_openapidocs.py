"""Descriptions in the OpenAPI documents, as kubectl explain reads them: every field of every
served kind has one, and a type a field refers to adds none of its own (kubectl would print
it after the field's)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from apiserver.kinds import strategies
from apiserver.machinery import ServedKind, v2_document, v3_document

SERVED = [ServedKind(s.resource, s.model, s.has_status) for s in strategies()]
DOCUMENTS = {
    "v3": v3_document(SERVED, "test")["components"]["schemas"],
    "v2": v2_document(SERVED, "test")["definitions"],
}
GVK = "x-kubernetes-group-version-kind"


def fields(name: str, schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, Any]]:
    for key, prop in (schema.get("properties") or {}).items():
        yield f"{name}:{path}{key}", prop
        yield from fields(name, prop, f"{path}{key}.")
    for marker, nested in (("[]", schema.get("items")), ("{}", schema.get("additionalProperties"))):
        if isinstance(nested, dict):
            yield from fields(name, nested, f"{path}{marker}")


def referred(prop: dict[str, Any]) -> Iterator[str]:
    for node in (prop, prop.get("items"), prop.get("additionalProperties")):
        if isinstance(node, dict):
            for ref in [node.get("$ref"), *[a.get("$ref") for a in node.get("allOf") or []]]:
                if isinstance(ref, str):
                    yield ref.rsplit("/", 1)[-1]


@pytest.mark.parametrize("version", sorted(DOCUMENTS))
def test_every_field_of_every_kind_has_a_description(version: str) -> None:
    schemas = DOCUMENTS[version]
    undescribed = [
        where
        for name, schema in schemas.items()
        for where, prop in fields(name, schema)
        if not (isinstance(prop.get("description"), str) and prop["description"].strip())
    ]
    assert undescribed == []
    served = {f"{k.resource.group}/{k.resource.version}/{k.resource.kind}" for k in SERVED}
    documented = {
        f"{g['group']}/{g['version']}/{g['kind']}"
        for schema in schemas.values()
        for g in schema.get(GVK, [])
    }
    assert served <= documented
    assert any(w.endswith(":metadata") for name in schemas for w, _ in fields(name, schemas[name]))


@pytest.mark.parametrize("version", sorted(DOCUMENTS))
def test_a_referred_type_adds_no_second_description(version: str) -> None:
    schemas = DOCUMENTS[version]
    targets = {
        target
        for name, schema in schemas.items()
        for _, prop in fields(name, schema)
        for target in referred(prop)
    }
    assert "io.k8s.api.resource.v1alpha3.DevicePatch" in targets
    described = sorted(
        t for t in targets if GVK not in schemas[t] and schemas[t].get("description")
    )
    assert described == []


def test_a_quantity_field_keeps_its_own_description() -> None:
    capacity = DOCUMENTS["v3"]["io.k8s.api.resource.v1alpha3.DeviceCapacity"]
    value = capacity["properties"]["value"]
    assert value["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}
    ]
    assert value["description"].startswith("Value defines how much")

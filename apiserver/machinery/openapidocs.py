"""Descriptions in the OpenAPI documents as ``kubectl explain`` prints them: one per field.

kubectl prints a field's description and then the description of the type the field refers
to (through ``$ref``, array items or map values), so a field described on both sides reads as
two unrelated paragraphs. Here every field gets exactly one description — its own, or when
it has none, its type's — and the types a field refers to keep none; only the kinds (the
schemas with ``x-kubernetes-group-version-kind``, which ``kubectl explain <kind>`` prints at
the top) keep their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

GVK = "x-kubernetes-group-version-kind"


def one_description_per_field(schemas: dict[str, Any]) -> None:
    """Give every field of ``schemas`` one description and strip the referred types' own,
    in place."""
    for schema in schemas.values():
        for prop in _fields(schema):
            if not prop.get("description"):
                target = schemas.get(_referred(prop) or "")
                if isinstance(target, dict) and target.get("description"):
                    if "$ref" in prop:  # a $ref takes no siblings: through allOf, as elsewhere
                        prop["allOf"] = [{"$ref": prop.pop("$ref")}]
                    prop["description"] = target["description"]
    for schema in schemas.values():
        if GVK not in schema:
            schema.pop("description", None)


def _fields(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every property schema under ``schema``, at any depth of inline objects."""
    for prop in (schema.get("properties") or {}).values():
        if isinstance(prop, dict):
            yield prop
            yield from _fields(prop)
    for nested in (schema.get("items"), schema.get("additionalProperties")):
        if isinstance(nested, dict):
            yield from _fields(nested)


def _referred(prop: dict[str, Any]) -> str | None:
    """The name of the component schema a field refers to, directly or through its items or
    values."""
    for node in (prop, prop.get("items"), prop.get("additionalProperties")):
        if not isinstance(node, dict):
            continue
        ref = node.get("$ref")
        if ref is None and isinstance(node.get("allOf"), list) and node["allOf"]:
            ref = node["allOf"][0].get("$ref")
        if isinstance(ref, str):
            return ref.rsplit("/", 1)[-1]
    return None

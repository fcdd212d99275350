"""`kubectl explain` reads like it does for a built-in kind: a field shows one description,
its own, not followed by the description of its type; metadata and quantities included."""

from __future__ import annotations

from typing import Any

import pytest

from .harness import ServerProcess

FIELDS = [
    # (kubectl explain path, OpenAPI v3 document, kind schema, property path)
    ("rsp.spec.devices.capacity.value", "resource.k8s.io/v1alpha3", "ResourceSlicePatch"),
    ("rsp.spec", "resource.k8s.io/v1alpha3", "ResourceSlicePatch"),
    ("rsp.metadata", "resource.k8s.io/v1alpha3", "ResourceSlicePatch"),
    ("resourceclaims.spec.devices", "resource.k8s.io/v1", "ResourceClaim"),
    ("resourceslices.spec.devices.capacity", "resource.k8s.io/v1", "ResourceSlice"),
    ("rpsr.status.pools", "resource.k8s.io/v1alpha1", "ResourcePoolStatusRequest"),
    ("ns.spec", "v1", "Namespace"),
]


def description_of(out: str) -> str:
    """The DESCRIPTION section of kubectl explain's output, with its line wrapping undone."""
    lines = out.split("DESCRIPTION:\n", 1)[1].split("\nFIELDS:", 1)[0].splitlines()
    return " ".join(line.strip() for line in lines if line.strip())


def resolve(schemas: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """The schema a field refers to (through allOf, array items or map values)."""
    for inner in (node, node.get("items"), node.get("additionalProperties")):
        if not isinstance(inner, dict):
            continue
        ref = inner.get("$ref") or (inner.get("allOf") or [{}])[0].get("$ref")
        if ref:
            return dict(schemas[ref.rsplit("/", 1)[-1]])
    return node


def field_schema(server: ServerProcess, group_version: str, kind: str, path: str) -> Any:
    prefix = "api" if "/" not in group_version else "apis"
    with server.client() as client:
        doc = client.get(f"/openapi/v3/{prefix}/{group_version}").json()
    schemas = doc["components"]["schemas"]
    node = next(
        s
        for s in schemas.values()
        if any(g["kind"] == kind for g in s.get("x-kubernetes-group-version-kind", []))
    )
    for name in path.split(".")[1:]:
        node = resolve(schemas, node)["properties"][name]
    return node


@pytest.mark.parametrize(("path", "group_version", "kind"), FIELDS)
def test_a_field_shows_its_own_description_once(
    server: ServerProcess, path: str, group_version: str, kind: str
) -> None:
    out = server.kubectl("explain", path).stdout
    own = field_schema(server, group_version, kind, path)["description"]
    assert own.strip()
    assert description_of(out) == " ".join(own.split())

"""Object metadata and condition validation shared by every kind, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    Condition,
    ObjectMeta,
    dns1123_label_errors,
    validate_annotations,
    validate_conditions,
    validate_labels,
    validate_object_meta,
)
from apiserver.api.field import ErrorType, Path


def meta(**fields: Any) -> ObjectMeta:
    return ObjectMeta.model_validate({"name": "obj", **fields})


def owner(**overrides: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Thing", "name": "t", "uid": "u-1", **overrides}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, []),
        ({"name": "a.b-c.example.com"}, []),
        ({"name": ""}, ["metadata.name"]),
        ({"name": None}, ["metadata.name"]),
        ({"name": "Bad_Name"}, ["metadata.name"]),
        ({"name": "-a"}, ["metadata.name"]),
        ({"name": "a" * 253}, []),
        # Too long (the pattern itself still holds).
        ({"name": "a" * 254}, ["metadata.name"]),
        ({"namespace": "ns"}, ["metadata.namespace"]),
        ({"generation": 0}, []),
        ({"generation": -1}, ["metadata.generation"]),
        ({"labels": {"app": "web", "example.com/tier": "", "a.b/c_d.e": "V-1.x"}}, []),
        ({"labels": {"bad key": "v"}}, ["metadata.labels"]),
        ({"labels": {"Example.com/k": "v"}}, ["metadata.labels"]),
        ({"labels": {"/k": "v"}}, ["metadata.labels"]),
        ({"labels": {"a/b/c": "v"}}, ["metadata.labels"]),
        ({"labels": {"k" * 64: "v"}}, ["metadata.labels"]),
        ({"labels": {"k": "-v"}}, ["metadata.labels[k]"]),
        ({"labels": {"k": "v" * 64}}, ["metadata.labels[k]"]),
        ({"labels": {"k": "a b"}}, ["metadata.labels[k]"]),
        # Annotation keys are checked case-insensitively; values are free text.
        ({"annotations": {"Example.com/Key": "any text at all\n"}}, []),
        ({"annotations": {"bad key": "v"}}, ["metadata.annotations"]),
        ({"annotations": {"a": "x" * (TOTAL_ANNOTATION_SIZE_LIMIT - 1)}}, []),
        ({"annotations": {"a": "x" * TOTAL_ANNOTATION_SIZE_LIMIT}}, ["metadata.annotations"]),
        ({"finalizers": ["kubernetes", "example.com/cleanup"]}, []),
        ({"finalizers": ["ok", "bad finalizer"]}, ["metadata.finalizers[1]"]),
        ({"ownerReferences": [owner()]}, []),
        (
            {"ownerReferences": [owner(), owner(uid="", name="")]},
            ["metadata.ownerReferences[1].name", "metadata.ownerReferences[1].uid"],
        ),
    ],
)
def test_cluster_scoped_object_meta(fields: dict[str, Any], expected: list[str]) -> None:
    errs = validate_object_meta(meta(**fields), namespaced=False)
    assert [e.field for e in errs] == expected


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"namespace": "default"}, []),
        ({}, ["metadata.namespace"]),
        ({"namespace": ""}, ["metadata.namespace"]),
        ({"namespace": "Bad"}, ["metadata.namespace"]),
        ({"namespace": "a.b"}, ["metadata.namespace"]),
        ({"namespace": "n" * 64}, ["metadata.namespace"]),
    ],
)
def test_namespaced_object_meta(fields: dict[str, Any], expected: list[str]) -> None:
    errs = validate_object_meta(meta(**fields), namespaced=True)
    assert [e.field for e in errs] == expected


@pytest.mark.parametrize(
    ("fields", "error_type"),
    [
        ({"name": ""}, ErrorType.REQUIRED),
        ({"name": "Bad"}, ErrorType.INVALID),
        ({"namespace": "ns"}, ErrorType.FORBIDDEN),
        ({"annotations": {"a": "x" * TOTAL_ANNOTATION_SIZE_LIMIT}}, ErrorType.TOO_LONG),
    ],
)
def test_object_meta_error_types(fields: dict[str, Any], error_type: ErrorType) -> None:
    [err] = validate_object_meta(meta(**fields), namespaced=False)
    assert err.type is error_type


def test_name_rule_is_the_kinds() -> None:
    errs = validate_object_meta(
        meta(name="a.b"), namespaced=False, name_errors=dns1123_label_errors
    )
    assert [e.field for e in errs] == ["metadata.name"]
    assert validate_object_meta(meta(name="a.b"), namespaced=False) == []


def test_path_prefix_is_the_callers() -> None:
    errs = validate_object_meta(
        meta(name="Bad"), namespaced=False, path=Path("spec").child("template").child("metadata")
    )
    assert [e.field for e in errs] == ["spec.template.metadata.name"]


def test_label_errors_name_the_key_and_value() -> None:
    errs = validate_labels({"bad key": "ok", "k": "-bad"}, Path("metadata").child("labels"))
    assert [(e.field, e.value) for e in errs] == [
        ("metadata.labels", "bad key"),
        ("metadata.labels[k]", "-bad"),
    ]


def test_annotation_size_counts_keys_and_values() -> None:
    half = TOTAL_ANNOTATION_SIZE_LIMIT // 2
    path = Path("metadata").child("annotations")
    assert validate_annotations({"k": "x" * (half - 1), "l": "y" * (half - 1)}, path) == []
    [err] = validate_annotations({"k": "x" * half, "l": "y" * half}, path)
    assert err.field == "metadata.annotations"


def cond(**overrides: Any) -> Condition:
    return Condition.model_validate(
        {
            "type": "Ready",
            "status": "True",
            "reason": "AllGood",
            "message": "",
            "lastTransitionTime": "2025-01-01T00:00:00Z",
            **overrides,
        }
    )


C = "status.conditions"


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([], []),
        ([cond(), cond(type="example.com/Attached", reason="A_b:c,d")], []),
        ([cond(type="")], [f"{C}[0].type"]),
        ([cond(type="bad type")], [f"{C}[0].type"]),
        ([cond(type="x" * 317)], [f"{C}[0].type"]),
        ([cond(), cond(type="Other"), cond()], [f"{C}[2].type"]),
        ([cond(reason="")], [f"{C}[0].reason"]),
        ([cond(reason="1Starts")], [f"{C}[0].reason"]),
        ([cond(reason="Ends,")], [f"{C}[0].reason"]),
        ([cond(reason="Has space")], [f"{C}[0].reason"]),
        ([cond(reason="R" * 1025)], [f"{C}[0].reason"]),
        ([cond(message="m" * (32 * 1024))], []),
        ([cond(message="m" * (32 * 1024 + 1))], [f"{C}[0].message"]),
        ([cond(observedGeneration=0)], []),
        ([cond(observedGeneration=-1)], [f"{C}[0].observedGeneration"]),
    ],
)
def test_conditions(conditions: list[Condition], expected: list[str]) -> None:
    errs = validate_conditions(conditions, Path("status").child("conditions"))
    assert [e.field for e in errs] == expected


@pytest.mark.parametrize(
    ("conditions", "error_type"),
    [
        ([cond(type="")], ErrorType.REQUIRED),
        ([cond(), cond()], ErrorType.DUPLICATE),
        ([cond(reason="bad reason")], ErrorType.INVALID),
        ([cond(reason="R" * 1025)], ErrorType.TOO_LONG),
    ],
)
def test_condition_error_types(conditions: list[Condition], error_type: ErrorType) -> None:
    [err] = validate_conditions(conditions, Path("status").child("conditions"))
    assert err.type is error_type

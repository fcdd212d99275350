"""Request body decoding (JSON, YAML) and strict checks against a kind's model with Kubernetes paths."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.api.field import ErrorType
from apiserver.api.resource import ResourcePoolStatusRequest, ResourceSlicePatch
from apiserver.machinery.decoding import (
    FieldValidation,
    check_object,
    decode_body,
    media_type,
)
from apiserver.machinery.errors import StatusError

# -- decode_body ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (b'{"a": 1, "b": [true, null]}', "application/json", {"a": 1, "b": [True, None]}),
        (b'{"a": 1}', None, {"a": 1}),
        (b'{"a": 1}', "application/json; charset=utf-8", {"a": 1}),
        (b"a: 1\nb:\n  - x\n", "application/yaml", {"a": 1, "b": ["x"]}),
        (b"a: 1\n", "application/x-yaml", {"a": 1}),
        (b"a: 1\n", "text/yaml", {"a": 1}),
        (b'{"a": 1}', "application/yaml", {"a": 1}),  # JSON is YAML (apply bodies are both)
        (
            # Timestamps and dates stay the strings that were sent, as in Kubernetes.
            b"t: 2024-01-02T03:04:05Z\nd: 2024-01-02\n",
            "application/yaml",
            {"t": "2024-01-02T03:04:05Z", "d": "2024-01-02"},
        ),
        (b"n: null\nf: 1.5\ns: '1'\n", "application/yaml", {"n": None, "f": 1.5, "s": "1"}),
    ],
)
def test_decode_body(body: bytes, content_type: str | None, expected: dict[str, Any]) -> None:
    assert decode_body(body, content_type) == expected


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/xml",
        "application/vnd.kubernetes.protobuf",
        "application/x-www-form-urlencoded",
        "application/apply-patch+yaml",  # a patch type, not an object's
    ],
)
def test_decode_body_refuses_other_media_types(content_type: str) -> None:
    with pytest.raises(StatusError) as caught:
        decode_body(b'{"a": 1}', content_type)
    assert caught.value.code == 415
    assert caught.value.reason == "UnsupportedMediaType"
    assert content_type in caught.value.message


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (b"", "application/json", "empty"),
        (b"  \n", "application/yaml", "empty"),
        (b"{", "application/json", "could not be decoded"),
        (b'{"a": 1,}', "application/json", "could not be decoded"),
        (b"\xff\xfe", "application/json", "could not be decoded"),
        (b"a: [", "application/yaml", "could not be decoded"),
        (b"a: 1\n---\nb: 2\n", "application/yaml", "could not be decoded"),
        # No arbitrary object construction from YAML tags.
        (
            b"a: !!python/object/apply:os.system ['true']",
            "application/yaml",
            "could not be decoded",
        ),
        (b"[1, 2]", "application/json", "not an array"),
        (b"- 1\n", "application/yaml", "not an array"),
        (b'"text"', "application/json", "not a string"),
        (b"42", "application/json", "not a number"),
        (b"true", "application/json", "not a boolean"),
        (b"null", "application/json", "not null"),
    ],
)
def test_bad_body_is_a_400(body: bytes, content_type: str, message: str) -> None:
    with pytest.raises(StatusError) as info:
        decode_body(body, content_type)
    assert info.value.code == 400
    assert info.value.reason == "BadRequest"
    assert message in info.value.message


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("application/json", "application/json"),
        ("Application/YAML; charset=utf-8", "application/yaml"),
        (None, ""),
        ("", ""),
    ],
)
def test_media_type(header: str | None, expected: str) -> None:
    assert media_type(header) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, FieldValidation.WARN),
        ("", FieldValidation.WARN),
        ("Strict", FieldValidation.STRICT),
        ("Warn", FieldValidation.WARN),
        ("Ignore", FieldValidation.IGNORE),
    ],
)
def test_field_validation_parse(value: str | None, expected: FieldValidation) -> None:
    assert FieldValidation.parse(value) is expected


@pytest.mark.parametrize("value", ["strict", "All", "true"])
def test_field_validation_rejects_other_values(value: str) -> None:
    with pytest.raises(StatusError) as info:
        FieldValidation.parse(value)
    assert info.value.code == 400


# -- check_object: unknown fields ----------------------------------------------------------


def rsp(devices: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourceSlicePatch",
        "metadata": {"name": "p"},
        "spec": {"devices": devices},
        **extra,
    }


def test_valid_object_parses_without_findings() -> None:
    obj = rsp(
        {
            "priority": 1,
            "attributes": {"a.example.com/x": {"int": 1}, "a.example.com/y": {"null": {}}},
            "capacity": {"a.example.com/mem": {"value": "1Gi"}},
            "filter": {"driver": "d.example.com", "selectors": [{"cel": {"expression": "1"}}]},
        }
    )
    before = copy.deepcopy(obj)
    model, unknown, errs = check_object(obj, ResourceSlicePatch)
    assert isinstance(model, ResourceSlicePatch)
    assert model.spec.devices.priority == 1
    assert (unknown, errs) == ([], [])
    assert obj == before


def test_unknown_fields_are_reported_with_kubernetes_paths_and_removed() -> None:
    obj = rsp(
        {
            "zz": 1,
            "attributes": {"a.example.com/x": {"int": 1, "zz": 2}},
            "capacity": {"a.example.com/mem": {"value": "1Gi", "unit": "bytes"}},
            "filter": {"selectors": [{"cel": {"expression": "true", "lang": "cel"}}]},
        },
        status={
            "conditions": [
                {
                    "type": "A",
                    "status": "True",
                    "reason": "R",
                    "lastTransitionTime": "2024-01-01T00:00:00Z",
                    "extra": True,
                }
            ]
        },
        top="level",
    )
    obj["metadata"]["bogus"] = {"deep": 1}
    model, unknown, errs = check_object(obj, ResourceSlicePatch)
    assert model is not None
    assert errs == []
    assert sorted(unknown) == sorted(
        [
            "top",
            "metadata.bogus",
            "spec.devices.zz",
            "spec.devices.attributes[a.example.com/x].zz",
            "spec.devices.capacity[a.example.com/mem].unit",
            "spec.devices.filter.selectors[0].cel.lang",
            "status.conditions[0].extra",
        ]
    )
    # What is left is exactly what Warn and Ignore store.
    assert obj == rsp(
        {
            "attributes": {"a.example.com/x": {"int": 1}},
            "capacity": {"a.example.com/mem": {"value": "1Gi"}},
            "filter": {"selectors": [{"cel": {"expression": "true"}}]},
        },
        status={
            "conditions": [
                {
                    "type": "A",
                    "status": "True",
                    "reason": "R",
                    "lastTransitionTime": "2024-01-01T00:00:00Z",
                }
            ]
        },
    )


# -- check_object: type errors ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("devices", "field", "error_type"),
    [
        ({"priority": "high"}, "spec.devices.priority", ErrorType.TYPE_INVALID),
        ({"priority": 1.5}, "spec.devices.priority", ErrorType.TYPE_INVALID),
        ({"priority": True}, "spec.devices.priority", ErrorType.TYPE_INVALID),
        (
            {"attributes": {"a.io/x": {"bool": "true"}}},
            "spec.devices.attributes[a.io/x].bool",
            ErrorType.TYPE_INVALID,
        ),
        (
            {"attributes": {"a.io/x": {"int": "1"}}},
            "spec.devices.attributes[a.io/x].int",
            ErrorType.TYPE_INVALID,
        ),
        ({"attributes": {"a.io/x": 5}}, "spec.devices.attributes[a.io/x]", ErrorType.TYPE_INVALID),
        ({"attributes": ["x"]}, "spec.devices.attributes", ErrorType.TYPE_INVALID),
        (
            {"capacity": {"a.io/m": {"value": True}}},
            "spec.devices.capacity[a.io/m].value",
            ErrorType.INVALID,
        ),
        (
            {"capacity": {"a.io/m": {"value": "lots"}}},
            "spec.devices.capacity[a.io/m].value",
            ErrorType.INVALID,
        ),
        ({"capacity": {"a.io/m": {}}}, "spec.devices.capacity[a.io/m].value", ErrorType.REQUIRED),
        ({"filter": {"selectors": "x"}}, "spec.devices.filter.selectors", ErrorType.TYPE_INVALID),
        (
            {"filter": {"selectors": [{"cel": {}}]}},
            "spec.devices.filter.selectors[0].cel.expression",
            ErrorType.REQUIRED,
        ),
        ({"filter": {"driver": 7}}, "spec.devices.filter.driver", ErrorType.TYPE_INVALID),
    ],
)
def test_wrong_types_name_the_path(
    devices: dict[str, Any], field: str, error_type: ErrorType
) -> None:
    model, _, errs = check_object(rsp(devices), ResourceSlicePatch)
    assert model is None
    assert [(e.field, e.type) for e in errs] == [(field, error_type)]


def test_type_error_detail_names_path_and_expected_type() -> None:
    _, _, errs = check_object(rsp({"priority": "high"}), ResourceSlicePatch)
    assert str(errs[0]) == (
        'spec.devices.priority: Invalid value: "high": '
        "spec.devices.priority in body must be of type integer"
    )


@pytest.mark.parametrize(
    ("obj", "fields"),
    [
        ({}, ["spec"]),
        ({"spec": {}}, ["spec.driver"]),
        ({"spec": {"driver": "d", "limit": "10"}}, ["spec.limit"]),
        ({"spec": {"driver": "d"}, "metadata": "x"}, ["metadata"]),
        ({"spec": {"driver": "d"}, "metadata": {"labels": {"a": 1}}}, ["metadata.labels[a]"]),
        ({"spec": {"driver": "d"}, "metadata": {"finalizers": "f"}}, ["metadata.finalizers"]),
        (
            {"spec": {"driver": "d"}, "status": {"pools": [{"driver": 1}]}},
            [
                "status.pools[0].driver",
                "status.pools[0].poolName",
                "status.pools[0].totalDevices",
                "status.pools[0].allocatedDevices",
                "status.pools[0].availableDevices",
                "status.pools[0].sliceCount",
                "status.pools[0].generation",
            ],
        ),
        (
            {
                "spec": {"driver": "d"},
                "status": {
                    "conditions": [
                        {
                            "type": "Complete",
                            "status": "Maybe",
                            "reason": "R",
                            "lastTransitionTime": "yesterday",
                        }
                    ]
                },
            },
            ["status.conditions[0].status", "status.conditions[0].lastTransitionTime"],
        ),
        ({"spec": {"driver": "d"}, "status": {"observationTime": 5}}, ["status.observationTime"]),
    ],
)
def test_rpsr_field_errors(obj: dict[str, Any], fields: list[str]) -> None:
    model, _, errs = check_object(obj, ResourcePoolStatusRequest)
    assert model is None
    assert [e.field for e in errs] == fields


def test_unsupported_enum_value_lists_the_supported_ones() -> None:
    obj = {
        "spec": {"driver": "d"},
        "status": {
            "conditions": [
                {
                    "type": "A",
                    "status": "Maybe",
                    "reason": "R",
                    "lastTransitionTime": "2024-01-01T00:00:00Z",
                }
            ]
        },
    }
    _, _, [err] = check_object(obj, ResourcePoolStatusRequest)
    assert err.type is ErrorType.NOT_SUPPORTED
    assert (
        err.message() == 'Unsupported value: "Maybe": supported values: "True", "False", "Unknown"'
    )


def test_unknown_fields_and_type_errors_are_both_reported() -> None:
    obj = rsp({"priority": "x", "bogus": 1})
    model, unknown, errs = check_object(obj, ResourceSlicePatch)
    assert model is None
    assert unknown == ["spec.devices.bogus"]
    assert [e.field for e in errs] == ["spec.devices.priority"]


def test_yaml_aliases_are_rejected_before_they_expand() -> None:
    """A "billion laughs" document: a few hundred bytes of aliases that expand exponentially."""
    lines = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for level in range(1, 9):
        refs = ", ".join([f"*{chr(96 + level)}"] * 9)
        lines.append(f"{chr(97 + level)}: &{chr(97 + level)} [{refs}]")
    with pytest.raises(StatusError) as caught:
        decode_body("\n".join(lines).encode(), "application/yaml")
    assert caught.value.code == 400
    assert "aliases" in caught.value.message

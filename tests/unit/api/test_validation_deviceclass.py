"""DeviceClass validation, table-driven: a class in, the exact failing field paths out."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.field import ErrorType
from apiserver.api.resource import DeviceClass, validate_device_class

GOOD_SELECTOR = {"cel": {"expression": 'device.driver == "gpu.example.com"'}}


def device_class(spec: dict[str, Any]) -> DeviceClass:
    return DeviceClass.model_validate({"metadata": {"name": "gpu.example.com"}, "spec": spec})


def opaque(parameters: Any, driver: str = "gpu.example.com") -> dict[str, Any]:
    return {"opaque": {"driver": driver, "parameters": parameters}}


def sized_parameters(size: int) -> dict[str, str]:
    """A JSON object whose compact serialization is exactly ``size`` bytes."""
    overhead = len('{"k":""}')
    return {"k": "x" * (size - overhead)}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, []),
        (
            {
                "selectors": [GOOD_SELECTOR],
                "config": [opaque({"apiVersion": "gpu.example.com/v1", "kind": "Config"})],
                "extendedResourceName": "example.com/gpu",
            },
            [],
        ),
        # Selectors: each needs a CEL expression that compiles; at most 32.
        ({"selectors": [GOOD_SELECTOR] * 32}, []),
        ({"selectors": [GOOD_SELECTOR] * 33}, ["spec.selectors"]),
        ({"selectors": [{}]}, ["spec.selectors[0].cel"]),
        (
            {"selectors": [{"cel": {"expression": "device.driver =="}}]},
            ["spec.selectors[0].cel.expression"],
        ),
        ({"selectors": [{"cel": {"expression": " "}}]}, ["spec.selectors[0].cel.expression"]),
        # Config: opaque only, at most 32, parameters a JSON object of at most 10 Ki.
        ({"config": [opaque({})] * 32}, []),
        ({"config": [opaque({})] * 33}, ["spec.config"]),
        ({"config": [{}]}, ["spec.config[0].opaque"]),
        ({"config": [opaque({}, driver="Bad_Driver")]}, ["spec.config[0].opaque.driver"]),
        ({"config": [opaque({}, driver="")]}, ["spec.config[0].opaque.driver"]),
        ({"config": [opaque([1, 2])]}, ["spec.config[0].opaque.parameters"]),
        ({"config": [opaque("text")]}, ["spec.config[0].opaque.parameters"]),
        ({"config": [opaque(None)]}, ["spec.config[0].opaque.parameters"]),
        ({"config": [opaque(sized_parameters(10 * 1024))]}, []),
        (
            {"config": [opaque(sized_parameters(10 * 1024 + 1))]},
            ["spec.config[0].opaque.parameters"],
        ),
        # Extended resource names: domain-prefixed, not kubernetes.io, quota-name compatible.
        ({"extendedResourceName": "example.com/gpu"}, []),
        ({"extendedResourceName": "gpu"}, ["spec.extendedResourceName"]),
        ({"extendedResourceName": "kubernetes.io/gpu"}, ["spec.extendedResourceName"]),
        ({"extendedResourceName": "requests.example.com/gpu"}, ["spec.extendedResourceName"]),
        ({"extendedResourceName": "example.com/" + "g" * 64}, ["spec.extendedResourceName"]),
        ({"extendedResourceName": "example.com/-gpu"}, ["spec.extendedResourceName"]),
    ],
)
def test_device_class_field_paths(spec: dict[str, Any], expected: list[str]) -> None:
    assert [e.field for e in validate_device_class(device_class(spec))] == expected


def test_parameters_errors_say_what_is_wrong() -> None:
    [not_object] = validate_device_class(device_class({"config": [opaque([1])]}))
    assert not_object.type is ErrorType.INVALID
    assert "must be a valid JSON object" in not_object.detail
    [too_long] = validate_device_class(
        device_class({"config": [opaque(sized_parameters(10 * 1024 + 1))]})
    )
    assert too_long.type is ErrorType.TOO_LONG


def test_selector_compile_error_carries_the_cel_message() -> None:
    [err] = validate_device_class(
        device_class({"selectors": [{"cel": {"expression": "device.driver =="}}]})
    )
    assert err.type is ErrorType.INVALID
    assert err.detail.startswith("compilation failed: ")
    assert "Syntax error" in err.detail


def test_unchanged_selectors_are_not_compiled_again_on_update() -> None:
    # Stored before a change of the environment: it would not compile today.
    stale = {"selectors": [{"cel": {"expression": "device.nosuchfield"}}, GOOD_SELECTOR]}
    old = device_class(stale)
    assert [e.field for e in validate_device_class(old)] == ["spec.selectors[0].cel.expression"]
    assert validate_device_class(device_class(stale), old) == []
    reordered = device_class({"selectors": list(reversed(stale["selectors"]))})
    assert [e.field for e in validate_device_class(reordered, old)] == [
        "spec.selectors[1].cel.expression"
    ]

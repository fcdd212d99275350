"""ResourceSlicePatch selectors are compiled and cost-checked by the CEL layer at validation."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.field import ErrorType
from apiserver.api.resource import ResourceSlicePatch, validate_resource_slice_patch

PATH = "spec.devices.filter.selectors"

NESTED = (
    "device.attributes.all(a, device.attributes[a].all(b, "
    "device.attributes.all(c, device.attributes[c].all(d, b != d))))"
)


def patch(*expressions: str) -> ResourceSlicePatch:
    selectors: list[dict[str, Any]] = [{"cel": {"expression": e}} for e in expressions]
    return ResourceSlicePatch.model_validate(
        {"metadata": {"name": "p"}, "spec": {"devices": {"filter": {"selectors": selectors}}}}
    )


def test_valid_selectors_pass() -> None:
    assert (
        validate_resource_slice_patch(
            patch(
                'device.driver == "gpu.example.com"',
                'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0',
                'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.0.0"))',
            )
        )
        == []
    )


@pytest.mark.parametrize(
    ("expression", "text"),
    [
        ("device.driver ==", "compilation failed: ERROR: <input>:1:17: Syntax error"),
        ("device.nme == 'x'", "compilation failed: ERROR: <input>:1:7: undefined field 'nme'"),
        ("size(devices) == 1", "undeclared reference to 'devices'"),
        ("1 + 2", "must evaluate to bool or the unknown type, not int"),
        ('quantity("1") + 1 == 2', "no matching overload"),
    ],
)
def test_bad_expression_is_invalid_with_the_cel_error(expression: str, text: str) -> None:
    errors = validate_resource_slice_patch(patch('device.driver == "x"', expression))
    assert len(errors) == 1
    error = errors[0]
    assert error.field == f"{PATH}[1].cel.expression"
    assert error.type is ErrorType.INVALID
    assert text in error.detail
    assert error.value == expression


def test_too_expensive_expression_is_forbidden() -> None:
    errors = validate_resource_slice_patch(patch(NESTED))
    assert [(e.field, e.type, e.detail) for e in errors] == [
        (f"{PATH}[0].cel.expression", ErrorType.FORBIDDEN, "too complex, exceeds cost limit")
    ]


def test_stored_expressions_are_not_compiled_again_on_update() -> None:
    old = patch(NESTED)  # as if stored before the limit applied
    assert validate_resource_slice_patch(patch(NESTED, 'device.driver == "x"'), old) == []
    errors = validate_resource_slice_patch(patch(NESTED, "device.driver =="), old)
    assert [e.field for e in errors] == [f"{PATH}[1].cel.expression"]


def test_each_bad_selector_gets_its_own_cause() -> None:
    errors = validate_resource_slice_patch(patch("device.driver ==", "true", "device.x"))
    assert [e.field for e in errors] == [
        f"{PATH}[0].cel.expression",
        f"{PATH}[2].cel.expression",
    ]

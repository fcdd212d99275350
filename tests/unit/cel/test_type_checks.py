"""Operators over device fields are type-checked at compile time, as upstream's checker does
with its typed ``device``: ``device.driver + 1`` is refused where each object is created
(DeviceClass selectors, claim request selectors and constraints, ResourceSlicePatch
selectors), naming the field; attribute values stay dynamic."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.field import ErrorType
from apiserver.api.resource import (
    DeviceClass,
    ResourceClaim,
    ResourceSlicePatch,
    validate_device_class,
    validate_resource_claim,
    validate_resource_slice_patch,
)
from apiserver.cel import CompileError, compile_constraint, compile_selector

BAD = "device.driver + 1 == 2"


@pytest.mark.parametrize(
    ("expression", "operator", "operands"),
    [
        (BAD, "_+_", "(string, int)"),
        ("device.driver > 1", "_>_", "(string, int)"),
        ("device.driver == 1", "_==_", "(string, int)"),
        (
            "device.capacity['d.example.com']['memory'] * 2 == 4",
            "_*_",
            "(kubernetes.Quantity, int)",
        ),
        ("device.driver && true", "_&&_", "(string, bool)"),
        ("!device.driver", "!_", "(string)"),
        ("-device.allowMultipleAllocations == 1", "-_", "(bool)"),
    ],
)
def test_an_operator_without_an_overload_for_device_field_types_does_not_compile(
    expression: str, operator: str, operands: str
) -> None:
    with pytest.raises(CompileError) as caught:
        compile_selector(expression)
    assert f"no matching overload for '{operator}' applied to '{operands}'" in str(caught.value)
    assert caught.value.line == 1
    assert caught.value.column is not None


@pytest.mark.parametrize(
    "expression",
    [
        "device.driver + '.x' == 'a.x'",
        "device.driver == 'a'",
        "device.driver < 'b'",
        "device.allowMultipleAllocations && true",
        "device.attributes['d.example.com'].n + 1 == 2",
        "device.attributes['d.example.com'].s == 'a'",
        "device.capacity['d.example.com']['memory'].isGreaterThan(quantity('1Gi'))",
        "device.capacity['d.example.com']['memory'] == quantity('1Gi')",
        "[1].exists(device, device + 1 == 2)",
    ],
)
def test_well_typed_or_dynamic_operands_compile(expression: str) -> None:
    compile_selector(expression)


def test_a_constraint_is_checked_on_an_indexed_device() -> None:
    with pytest.raises(CompileError):
        compile_constraint("devices[0].driver + 1 == 2")
    compile_constraint("devices[0].driver + 'x' == 'ax'")


def _selector(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def test_device_class_selector_with_a_type_error_is_refused() -> None:
    obj = {"metadata": {"name": "gpu.example.com"}, "spec": {"selectors": [_selector(BAD)]}}
    [err] = validate_device_class(DeviceClass.model_validate(obj))
    assert err.field == "spec.selectors[0].cel.expression"
    assert err.type is ErrorType.INVALID
    assert "no matching overload for '_+_'" in err.detail


def test_claim_request_selector_with_a_type_error_is_refused() -> None:
    request = {"deviceClassName": "gpu.example.com", "selectors": [_selector(BAD)]}
    obj = {
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}},
    }
    [err] = validate_resource_claim(ResourceClaim.model_validate(obj))
    assert err.field == "spec.devices.requests[0].exactly.selectors[0].cel.expression"
    assert "no matching overload for '_+_'" in err.detail


def test_resource_slice_patch_selector_with_a_type_error_is_refused() -> None:
    devices = {"filter": {"selectors": [_selector("device.driver == 'x'"), _selector(BAD)]}}
    obj = {"metadata": {"name": "p"}, "spec": {"devices": devices}}
    [err] = validate_resource_slice_patch(ResourceSlicePatch.model_validate(obj))
    assert err.field == "spec.devices.filter.selectors[1].cel.expression"
    assert "no matching overload for '_+_'" in err.detail

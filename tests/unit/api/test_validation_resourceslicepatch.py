"""ResourceSlicePatch validation, table-driven: an object in, the exact failing field paths out."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.field import ErrorType
from apiserver.api.resource import (
    ResourceSlicePatch,
    validate_resource_slice_patch,
    validate_resource_slice_patch_status,
)

A = "spec.devices.attributes"
C = "spec.devices.capacity"
F = "spec.devices.filter"


def patch(devices: dict[str, Any], status: dict[str, Any] | None = None) -> ResourceSlicePatch:
    obj: dict[str, Any] = {"metadata": {"name": "p"}, "spec": {"devices": devices}}
    if status is not None:
        obj["status"] = status
    return ResourceSlicePatch.model_validate(obj)


def attrs(count: int, prefix: str = "a") -> dict[str, Any]:
    return {f"d.example.com/{prefix}{i}": {"int": i} for i in range(count)}


def caps(count: int) -> dict[str, Any]:
    return {f"d.example.com/c{i}": {"value": "1"} for i in range(count)}


def fields(devices: dict[str, Any]) -> list[str]:
    return [e.field for e in validate_resource_slice_patch(patch(devices))]


@pytest.mark.parametrize(
    ("devices", "expected"),
    [
        ({}, []),
        (
            {
                "priority": 10,
                "filter": {
                    "deviceClassName": "gpu.example.com",
                    "driver": "gpu.example.com",
                    "pool": "node-1/pool.a",
                    "device": "gpu-0",
                    "selectors": [{"cel": {"expression": "device.driver == 'x'"}}],
                },
                "attributes": {
                    "d.example.com/i": {"int": 1},
                    "d.example.com/b": {"bool": False},
                    "d.example.com/s": {"string": ""},
                    "d.example.com/v": {"version": "1.2.3-rc.1+build.5"},
                    "d.example.com/gone": {"null": {}},
                },
                "capacity": {
                    "d.example.com/mem": {"value": "80Gi"},
                    "d.example.com/n": {"value": 0},
                },
            },
            [],
        ),
        # Names: a domain is required, and both parts must be well formed.
        ({"attributes": {"x": {"int": 1}}}, [f"{A}[x]"]),
        ({"attributes": {"/x": {"int": 1}}}, [f"{A}[/x]"]),
        ({"attributes": {"Upper.io/x": {"int": 1}}}, [f"{A}[Upper.io/x]"]),
        ({"attributes": {"a.io/1x": {"int": 1}}}, [f"{A}[a.io/1x]"]),
        ({"attributes": {"a.io/x-y": {"int": 1}}}, [f"{A}[a.io/x-y]"]),
        ({"attributes": {"a/b/c": {"int": 1}}}, [f"{A}[a/b/c]"]),
        ({"attributes": {"a.io/" + "x" * 32: {"int": 1}}}, []),
        ({"attributes": {"a.io/" + "x" * 33: {"int": 1}}}, [f"{A}[a.io/{'x' * 33}]"]),
        ({"attributes": {"d" * 64 + "/x": {"int": 1}}}, [f"{A}[{'d' * 64}/x]"]),
        ({"capacity": {"mem": {"value": "1"}}}, [f"{C}[mem]"]),
        ({"capacity": {"a.io/my mem": {"value": "1"}}}, [f"{C}[a.io/my mem]"]),
        # Exactly one value per attribute.
        ({"attributes": {"a.io/x": {}}}, [f"{A}[a.io/x]"]),
        ({"attributes": {"a.io/x": {"int": 1, "bool": True}}}, [f"{A}[a.io/x]"]),
        ({"attributes": {"a.io/x": {"null": {}, "string": "s"}}}, [f"{A}[a.io/x]"]),
        # Strings and versions: at most 64 bytes; versions are semver.
        ({"attributes": {"a.io/s": {"string": "x" * 64}}}, []),
        ({"attributes": {"a.io/s": {"string": "x" * 65}}}, [f"{A}[a.io/s].string"]),
        ({"attributes": {"a.io/s": {"string": "é" * 33}}}, [f"{A}[a.io/s].string"]),
        ({"attributes": {"a.io/v": {"version": "1.2.3"}}}, []),
        ({"attributes": {"a.io/v": {"version": "1.2"}}}, [f"{A}[a.io/v].version"]),
        ({"attributes": {"a.io/v": {"version": "v1.2.3"}}}, [f"{A}[a.io/v].version"]),
        ({"attributes": {"a.io/v": {"version": "01.2.3"}}}, [f"{A}[a.io/v].version"]),
        ({"attributes": {"a.io/v": {"version": "1.2.3-"}}}, [f"{A}[a.io/v].version"]),
        (
            {"attributes": {"a.io/v": {"version": "1.2.3-" + "a" * 60}}},
            [f"{A}[a.io/v].version"],
        ),
        # At most 32 attributes and capacities together.
        ({"attributes": attrs(32)}, []),
        ({"attributes": attrs(33)}, ["spec.devices"]),
        ({"attributes": attrs(20), "capacity": caps(12)}, []),
        ({"attributes": attrs(20), "capacity": caps(13)}, ["spec.devices"]),
        ({"attributes": {**attrs(32), "bad": {"int": 1}}}, [f"{A}[bad]", "spec.devices"]),
        # Priority is a 32-bit integer.
        ({"priority": 2**31 - 1}, []),
        ({"priority": -(2**31)}, []),
        ({"priority": 2**31}, ["spec.devices.priority"]),
        ({"priority": -(2**31) - 1}, ["spec.devices.priority"]),
        # Filter.
        ({"filter": {}}, []),
        ({"filter": {"driver": "Bad_Driver"}}, [f"{F}.driver"]),
        ({"filter": {"driver": ""}}, [f"{F}.driver"]),
        ({"filter": {"driver": "d" * 64}}, [f"{F}.driver"]),
        ({"filter": {"pool": "a//b"}}, [f"{F}.pool"]),
        ({"filter": {"pool": ""}}, [f"{F}.pool"]),
        ({"filter": {"pool": "p" * 254}}, [f"{F}.pool"]),
        ({"filter": {"device": "gpu_0"}}, [f"{F}.device"]),
        ({"filter": {"device": "gpu.0"}}, [f"{F}.device"]),
        ({"filter": {"deviceClassName": "Bad"}}, [f"{F}.deviceClassName"]),
        ({"filter": {"selectors": [{}]}}, [f"{F}.selectors[0].cel"]),
        (
            {"filter": {"selectors": [{"cel": {"expression": "  "}}]}},
            [f"{F}.selectors[0].cel.expression"],
        ),
        (
            {
                "filter": {
                    "selectors": [
                        {"cel": {"expression": "true"}},
                        {"cel": {"expression": "x" * 10241}},
                    ]
                }
            },
            [f"{F}.selectors[1].cel.expression"],
        ),
        ({"filter": {"selectors": [{"cel": {"expression": "true"}}] * 32}}, []),
        ({"filter": {"selectors": [{"cel": {"expression": "true"}}] * 33}}, [f"{F}.selectors"]),
        # Every problem is reported, not just the first.
        (
            {
                "priority": 2**40,
                "filter": {"driver": "Bad", "device": "Bad"},
                "attributes": {"x": {"int": 1}, "a.io/y": {}},
                "capacity": {"c": {"value": "1"}},
            },
            [
                f"{F}.driver",
                f"{F}.device",
                "spec.devices.priority",
                f"{A}[x]",
                f"{A}[a.io/y]",
                f"{C}[c]",
            ],
        ),
    ],
)
def test_resource_slice_patch_validation(devices: dict[str, Any], expected: list[str]) -> None:
    assert fields(devices) == expected


T = "spec.devices.taints"
PREFIX_253 = ("d" * 63 + ".") * 3 + "d" * 61


def taints(count: int, **taint: Any) -> list[dict[str, Any]]:
    return [{"key": f"ops.example.com/t{i}", "effect": "NoSchedule", **taint} for i in range(count)]


@pytest.mark.parametrize(
    ("devices", "expected"),
    [
        # At most 4 taints: 4 accepted, 5 refused naming the list.
        ({"taints": taints(4)}, []),
        ({"taints": taints(5)}, [T]),
        # Every effect upstream knows.
        (
            {
                "taints": [
                    {"key": "a.io/x", "effect": "None"},
                    {"key": "a.io/x", "effect": "NoSchedule", "value": "v"},
                    {"key": "x", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"},
                ]
            },
            [],
        ),
        # The key is a qualified name: name part at most 63, prefix a DNS subdomain (253).
        ({"taints": [{"key": "a.io/" + "k" * 63, "effect": "None"}]}, []),
        ({"taints": [{"key": "a.io/" + "k" * 64, "effect": "None"}]}, [f"{T}[0].key"]),
        ({"taints": [{"key": PREFIX_253 + "/k", "effect": "None"}]}, []),
        ({"taints": [{"key": PREFIX_253 + "d/k", "effect": "None"}]}, [f"{T}[0].key"]),
        ({"taints": [{"key": "", "effect": "None"}]}, [f"{T}[0].key"]),
        ({"taints": [{"key": "a b", "effect": "None"}]}, [f"{T}[0].key"]),
        ({"taints": [{"key": "a/b/c", "effect": "None"}]}, [f"{T}[0].key"]),
        # The value is a label value: at most 63.
        ({"taints": [{"key": "k", "value": "v" * 63, "effect": "None"}]}, []),
        ({"taints": [{"key": "k", "value": "v" * 64, "effect": "None"}]}, [f"{T}[0].value"]),
        ({"taints": [{"key": "k", "value": "-v", "effect": "None"}]}, [f"{T}[0].value"]),
        # Only the first 4 of too many are checked further.
        ({"taints": [*taints(4), {"key": "bad key", "effect": "None"}]}, [T]),
    ],
)
def test_taint_validation(devices: dict[str, Any], expected: list[str]) -> None:
    assert fields(devices) == expected


def test_too_many_taints_is_too_many() -> None:
    [err] = validate_resource_slice_patch(patch({"taints": taints(5)}))
    assert err.type is ErrorType.TOO_MANY
    assert str(err) == f"{T}: Too many: must have at most 4 items (has 5)"


@pytest.mark.parametrize(
    ("devices", "error_type"),
    [
        ({"attributes": {"x": {"int": 1}}}, ErrorType.REQUIRED),
        ({"attributes": {"a.io/x": {}}}, ErrorType.INVALID),
        ({"attributes": {"a.io/s": {"string": "x" * 65}}}, ErrorType.TOO_LONG),
        ({"attributes": attrs(33)}, ErrorType.INVALID),
        ({"filter": {"selectors": [{"cel": {"expression": "true"}}] * 33}}, ErrorType.TOO_MANY),
        ({"filter": {"driver": "d" * 64}}, ErrorType.TOO_LONG),
    ],
)
def test_error_types(devices: dict[str, Any], error_type: ErrorType) -> None:
    [err] = validate_resource_slice_patch(patch(devices))
    assert err.type is error_type


def test_missing_domain_message() -> None:
    [err] = validate_resource_slice_patch(patch({"attributes": {"x": {"int": 1}}}))
    assert str(err) == "spec.devices.attributes[x]: Required value: the domain must be set"


def test_exactly_one_value_message_names_the_values_set() -> None:
    [err] = validate_resource_slice_patch(
        patch({"attributes": {"a.io/x": {"int": 1, "string": "s"}}})
    )
    assert err.message() == 'Invalid value: ["int","string"]: exactly one value must be specified'


def condition(**overrides: Any) -> dict[str, Any]:
    return {
        "type": "Ready",
        "status": "True",
        "reason": "AllGood",
        "message": "",
        "lastTransitionTime": "2025-01-01T00:00:00Z",
        **overrides,
    }


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({}, []),
        ({"observedGeneration": 3, "matchedDevices": 0, "conditions": [condition()]}, []),
        ({"observedGeneration": -1}, ["status.observedGeneration"]),
        ({"matchedDevices": -1}, ["status.matchedDevices"]),
        ({"conditions": [condition(reason="not valid")]}, ["status.conditions[0].reason"]),
        ({"conditions": [condition(reason="")]}, ["status.conditions[0].reason"]),
        ({"conditions": [condition(type="bad type")]}, ["status.conditions[0].type"]),
        (
            {"conditions": [condition(), condition(status="False")]},
            ["status.conditions[1].type"],
        ),
        (
            {"conditions": [condition(observedGeneration=-2)]},
            ["status.conditions[0].observedGeneration"],
        ),
    ],
)
def test_resource_slice_patch_status_validation(
    status: dict[str, Any], expected: list[str]
) -> None:
    errs = validate_resource_slice_patch_status(patch({}, status).status)
    assert [e.field for e in errs] == expected


def test_no_status_is_valid() -> None:
    assert validate_resource_slice_patch_status(None) == []

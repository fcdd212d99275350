"""ResourcePoolStatusRequest validation, table-driven: spec, immutability and the status limits."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.field import ErrorType
from apiserver.api.resource import (
    ResourcePoolStatusRequest,
    validate_resource_pool_status_request,
    validate_resource_pool_status_request_status,
    validate_resource_pool_status_request_update,
)


def request(
    spec: dict[str, Any], status: dict[str, Any] | None = None, **meta: Any
) -> ResourcePoolStatusRequest:
    obj: dict[str, Any] = {"metadata": {"name": "r", **meta}, "spec": spec}
    if status is not None:
        obj["status"] = status
    return ResourcePoolStatusRequest.model_validate(obj)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"driver": "gpu.example.com"}, []),
        ({"driver": "gpu.example.com", "poolName": "node-1/pool.a", "limit": 50}, []),
        # The KEP's own examples name drivers like example.com/gpu.
        ({"driver": "example.com/gpu"}, []),
        ({"driver": ""}, ["spec.driver"]),
        ({"driver": "GPU.example.com"}, ["spec.driver"]),
        ({"driver": "d" * 64}, ["spec.driver"]),
        ({"driver": "example.com/GPU"}, ["spec.driver"]),
        ({"driver": "example.com/a/b"}, ["spec.driver"]),
        ({"driver": "/gpu"}, ["spec.driver"]),
        ({"driver": "d", "poolName": ""}, ["spec.poolName"]),
        ({"driver": "d", "poolName": "Pool"}, ["spec.poolName"]),
        ({"driver": "d", "poolName": "a//b"}, ["spec.poolName"]),
        ({"driver": "d", "limit": 1}, []),
        ({"driver": "d", "limit": 1000}, []),
        ({"driver": "d", "limit": 0}, ["spec.limit"]),
        ({"driver": "d", "limit": 1001}, ["spec.limit"]),
        ({"driver": "d", "limit": -5}, ["spec.limit"]),
        ({"driver": "d", "ttlSecondsAfterComplete": 0}, []),
        ({"driver": "d", "ttlSecondsAfterComplete": 2**31 - 1}, []),
        ({"driver": "d", "ttlSecondsAfterComplete": -1}, ["spec.ttlSecondsAfterComplete"]),
        ({"driver": "d", "ttlSecondsAfterComplete": 2**31}, ["spec.ttlSecondsAfterComplete"]),
        (
            {"driver": "", "poolName": "", "limit": 0},
            ["spec.driver", "spec.poolName", "spec.limit"],
        ),
    ],
)
def test_spec_validation(spec: dict[str, Any], expected: list[str]) -> None:
    assert [e.field for e in validate_resource_pool_status_request(request(spec))] == expected


def test_missing_driver_is_required() -> None:
    [err] = validate_resource_pool_status_request(request({"driver": ""}))
    assert err.type is ErrorType.REQUIRED


def test_ttl_message_names_the_bounds() -> None:
    [err] = validate_resource_pool_status_request(
        request({"driver": "d", "ttlSecondsAfterComplete": -1})
    )
    assert str(err) == (
        "spec.ttlSecondsAfterComplete: Invalid value: -1: must be between 0 and 2147483647,"
        " inclusive"
    )


def test_limit_message_names_the_bounds() -> None:
    [err] = validate_resource_pool_status_request(request({"driver": "d", "limit": 1001}))
    assert str(err) == "spec.limit: Invalid value: 1001: must be between 1 and 1000, inclusive"


@pytest.mark.parametrize(
    ("old_spec", "new_spec", "expected"),
    [
        ({"driver": "d", "limit": 100}, {"driver": "d", "limit": 100}, []),
        ({"driver": "d", "limit": 100}, {"driver": "d", "limit": 5}, ["spec"]),
        ({"driver": "d"}, {"driver": "e"}, ["spec"]),
        ({"driver": "d"}, {"driver": "d", "poolName": "p"}, ["spec"]),
        ({"driver": "d"}, {"driver": "d", "ttlSecondsAfterComplete": 60}, ["spec"]),
        (
            {"driver": "d", "ttlSecondsAfterComplete": 60},
            {"driver": "d", "ttlSecondsAfterComplete": 60},
            [],
        ),
    ],
)
def test_spec_is_immutable(
    old_spec: dict[str, Any], new_spec: dict[str, Any], expected: list[str]
) -> None:
    errs = validate_resource_pool_status_request_update(request(new_spec), request(old_spec))
    assert [e.field for e in errs] == expected
    if errs:
        assert errs[0].detail == "field is immutable"


def test_metadata_and_status_changes_are_not_spec_changes() -> None:
    old = request({"driver": "d"})
    new = request({"driver": "d"}, {"truncated": True}, labels={"a": "b"})
    assert validate_resource_pool_status_request_update(new, old) == []


def pool(**overrides: Any) -> dict[str, Any]:
    return {
        "driver": "gpu.example.com",
        "poolName": "pool-a",
        "nodeName": "node-1",
        "totalDevices": 4,
        "allocatedDevices": 1,
        "availableDevices": 3,
        "unavailableDevices": 0,
        "sliceCount": 1,
        "generation": 2,
        **overrides,
    }


def condition(**overrides: Any) -> dict[str, Any]:
    return {
        "type": "Complete",
        "status": "True",
        "reason": "Calculated",
        "message": "",
        "lastTransitionTime": "2025-01-01T00:00:00Z",
        **overrides,
    }


S = "status"


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({}, []),
        (
            {
                "observationTime": "2025-01-01T00:00:00Z",
                "pools": [pool(), pool(poolName="pool-b", nodeName=None)],
                "conditions": [condition()],
                "validationErrors": ["pool pool-c is incomplete"],
                "truncated": False,
                "totalMatchingPools": 2,
            },
            [],
        ),
        ({"validationErrors": ["e"] * 10}, []),
        ({"validationErrors": ["e"] * 11}, [f"{S}.validationErrors"]),
        ({"validationErrors": ["ok", "x" * 256]}, []),
        ({"validationErrors": ["ok", "x" * 257]}, [f"{S}.validationErrors[1]"]),
        (
            {"validationErrors": ["x" * 300] * 11},
            [f"{S}.validationErrors"] + [f"{S}.validationErrors[{i}]" for i in range(11)],
        ),
        ({"pools": [pool(totalDevices=-1)]}, [f"{S}.pools[0].totalDevices"]),
        (
            {"pools": [pool(), pool(allocatedDevices=-1, sliceCount=-1)]},
            [f"{S}.pools[1].allocatedDevices", f"{S}.pools[1].sliceCount"],
        ),
        ({"pools": [pool(driver="Bad")]}, [f"{S}.pools[0].driver"]),
        ({"pools": [pool(poolName="")]}, [f"{S}.pools[0].poolName"]),
        ({"pools": [pool()] * 1000}, []),
        ({"pools": [pool()] * 1001}, [f"{S}.pools"]),
        ({"totalMatchingPools": -1}, [f"{S}.totalMatchingPools"]),
        ({"conditions": [condition(reason="bad reason")]}, [f"{S}.conditions[0].reason"]),
        ({"conditions": [condition(reason="Bad-Reason")]}, [f"{S}.conditions[0].reason"]),
        ({"conditions": [condition(reason="Ok_Reason:1,2")]}, []),
        ({"conditions": [condition(), condition()]}, [f"{S}.conditions[1].type"]),
    ],
)
def test_status_validation(status: dict[str, Any], expected: list[str]) -> None:
    errs = validate_resource_pool_status_request_status(request({"driver": "d"}, status).status)
    assert [e.field for e in errs] == expected


def test_no_status_is_valid() -> None:
    assert validate_resource_pool_status_request_status(None) == []


def test_validation_errors_limits_have_their_error_types() -> None:
    status = request({"driver": "d"}, {"validationErrors": ["x" * 257] + ["e"] * 10}).status
    errs = validate_resource_pool_status_request_status(status)
    assert [e.type for e in errs] == [ErrorType.TOO_MANY, ErrorType.TOO_LONG]

"""ResourceClaim and ResourceClaimTemplate validation, table-driven: an object in, the exact
failing field paths out. The status rules also run through the registry's status subresource."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from apiserver.api.field import ErrorType
from apiserver.api.resource import (
    ResourceClaim,
    ResourceClaimTemplate,
    set_claim_spec_defaults,
    validate_resource_claim,
    validate_resource_claim_status_update,
    validate_resource_claim_template,
    validate_resource_claim_template_update,
    validate_resource_claim_update,
)
from apiserver.kinds.resourceclaim import ResourceClaimStrategy, claim_state
from apiserver.machinery import Registry, StatusSubresource, WriteOptions
from apiserver.machinery.errors import StatusError
from apiserver.storage.sqlite import SQLiteStore
from apiserver.toolkit import MERGE_PATCH

R = "spec.devices.requests"
K = "spec.devices.constraints"
CFG = "spec.devices.config"
RES = "status.allocation.devices.results"
DEV = "status.devices"

# KEP-5254's first user story: four devices with contiguous ids.
KEP_CONNECTED = (
    "size(devices) == 4 && "
    "devices.map(d, d.attributes['mla.example.com'].deviceid).max() - "
    "devices.map(d, d.attributes['mla.example.com'].deviceid).min() == 3"
)
TOO_COSTLY = "devices.all(a, devices.all(b, devices.all(c, devices.all(d, a.driver == d.driver))))"
SHARE = "8d4e1c2a-3b5f-4a6e-9c7d-0e1f2a3b4c5d"


def exact(**fields: Any) -> dict[str, Any]:
    return {"deviceClassName": "gpu.example.com", **fields}


def request(name: str = "gpu", **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": exact(**fields)}


def claim(
    devices: dict[str, Any], status: dict[str, Any] | None = None, **meta: Any
) -> ResourceClaim:
    obj: dict[str, Any] = {
        "metadata": {"name": "c", "namespace": "default", **meta},
        "spec": {"devices": devices},
    }
    if status is not None:
        obj["status"] = status
    return ResourceClaim.model_validate(obj)


def spec_fields(devices: dict[str, Any]) -> list[str]:
    return [e.field for e in validate_resource_claim(claim(devices))]


def toleration(**fields: Any) -> dict[str, Any]:
    return {"requests": [request(tolerations=[fields])]}


def constraint(**fields: Any) -> dict[str, Any]:
    return {"requests": [request()], "constraints": [fields]}


def cel(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


# -- the spec -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("devices", "expected"),
    [
        ({}, []),
        ({"requests": [request()]}, []),
        # A valid KEP-5254 cel constraint is accepted.
        (
            {
                "requests": [request("mla-request", count=4)],
                "constraints": [{"requests": ["mla-request"], **cel(KEP_CONNECTED)}],
            },
            [],
        ),
        # Requests: DNS labels, unique, at most 32, exactly one of exactly / firstAvailable.
        ({"requests": [request(f"r{i}") for i in range(32)]}, []),
        ({"requests": [request(f"r{i}") for i in range(33)]}, [R]),
        ({"requests": [request("gpu"), request("gpu")]}, [f"{R}[1].name"]),
        ({"requests": [request("GPU")]}, [f"{R}[0].name"]),
        ({"requests": [request("")]}, [f"{R}[0].name"]),
        ({"requests": [{"name": "gpu"}]}, [f"{R}[0]"]),
        ({"requests": [{"name": "gpu", "firstAvailable": []}]}, [f"{R}[0]"]),
        (
            {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": exact(),
                        "firstAvailable": [{"name": "a", **exact()}],
                    }
                ]
            },
            [f"{R}[0]"],
        ),
        # Exact requests: a class, selectors that compile, count rules per allocation mode.
        ({"requests": [request(deviceClassName="")]}, [f"{R}[0].exactly.deviceClassName"]),
        ({"requests": [request(deviceClassName="Gpu_Class")]}, [f"{R}[0].exactly.deviceClassName"]),
        (
            {"requests": [request(selectors=[{"cel": {"expression": "device.driver =="}}])]},
            [f"{R}[0].exactly.selectors[0].cel.expression"],
        ),
        ({"requests": [request(selectors=[{}])]}, [f"{R}[0].exactly.selectors[0].cel"]),
        (
            {"requests": [request(selectors=[{"cel": {"expression": "true"}}] * 33)]},
            [f"{R}[0].exactly.selectors"],
        ),
        ({"requests": [request(allocationMode="ExactCount", count=3)]}, []),
        ({"requests": [request(count=0)]}, [f"{R}[0].exactly.count"]),
        ({"requests": [request(count=-1)]}, [f"{R}[0].exactly.count"]),
        ({"requests": [request(allocationMode="All")]}, []),
        ({"requests": [request(allocationMode="All", count=2)]}, [f"{R}[0].exactly.count"]),
        ({"requests": [request(adminAccess=True)]}, []),
        # Tolerations.
        (
            toleration(key="example.com/flaky", operator="Equal", value="yes", effect="NoSchedule"),
            [],
        ),
        (toleration(operator="Exists"), []),
        (toleration(key="k", operator="Exists", effect="NoExecute", tolerationSeconds=30), []),
        (
            toleration(key="k", operator="Exists", value="v"),
            [f"{R}[0].exactly.tolerations[0].value"],
        ),
        (toleration(operator="Equal", value="v"), [f"{R}[0].exactly.tolerations[0].operator"]),
        (toleration(key="bad key"), [f"{R}[0].exactly.tolerations[0].key"]),
        (toleration(key="k", value="not a label value!"), [f"{R}[0].exactly.tolerations[0].value"]),
        (
            toleration(key="k", effect="NoSchedule", tolerationSeconds=5),
            [f"{R}[0].exactly.tolerations[0].effect"],
        ),
        (toleration(key="k", tolerationSeconds=5), [f"{R}[0].exactly.tolerations[0].effect"]),
        (
            {"requests": [request(tolerations=[{"operator": "Exists"}] * 17)]},
            [f"{R}[0].exactly.tolerations"],
        ),
        # Capacity requirements: qualified capacity names.
        ({"requests": [request(capacity={"requests": {"memory": "1Gi", "a.io/bw": 10}})]}, []),
        (
            {"requests": [request(capacity={"requests": {"a/b/c": "1"}})]},
            [f"{R}[0].exactly.capacity.requests[a/b/c]"],
        ),
        # firstAvailable: at most 8 subrequests, unique DNS-label names, same rules as exactly.
        (
            {
                "requests": [
                    {
                        "name": "gpu",
                        "firstAvailable": [{"name": f"s{i}", **exact()} for i in range(8)],
                    }
                ]
            },
            [],
        ),
        (
            {
                "requests": [
                    {
                        "name": "gpu",
                        "firstAvailable": [{"name": f"s{i}", **exact()} for i in range(9)],
                    }
                ]
            },
            [f"{R}[0].firstAvailable"],
        ),
        (
            {
                "requests": [
                    {
                        "name": "gpu",
                        "firstAvailable": [{"name": "a", **exact()}, {"name": "a", **exact()}],
                    }
                ]
            },
            [f"{R}[0].firstAvailable[1].name"],
        ),
        (
            {"requests": [{"name": "gpu", "firstAvailable": [{"name": "A_1", **exact()}]}]},
            [f"{R}[0].firstAvailable[0].name"],
        ),
        (
            {"requests": [{"name": "gpu", "firstAvailable": [{"name": "a", **exact(count=0)}]}]},
            [f"{R}[0].firstAvailable[0].count"],
        ),
        (
            {
                "requests": [
                    {
                        "name": "gpu",
                        "firstAvailable": [
                            {
                                "name": "a",
                                **exact(
                                    tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]
                                ),
                            }
                        ],
                    }
                ]
            },
            [f"{R}[0].firstAvailable[0].tolerations[0].value"],
        ),
        # Constraints: references to existing requests (or request/subrequest), exactly one kind.
        (constraint(matchAttribute="gpu.example.com/numa"), []),
        (constraint(distinctAttribute="gpu.example.com/index"), []),
        (constraint(requests=["gpu"], matchAttribute="gpu.example.com/numa"), []),
        (constraint(requests=["other"], matchAttribute="a.io/x"), [f"{K}[0].requests[0]"]),
        (constraint(requests=["gpu", "gpu"], matchAttribute="a.io/x"), [f"{K}[0].requests[1]"]),
        (constraint(requests=["gpu/a/b"], matchAttribute="a.io/x"), [f"{K}[0].requests[0]"]),
        (constraint(requests=["gpu/sub"], matchAttribute="a.io/x"), [f"{K}[0].requests[0]"]),
        (constraint(requests=["Gpu"], matchAttribute="a.io/x"), [f"{K}[0].requests[0]"]),
        (
            {
                "requests": [{"name": "gpu", "firstAvailable": [{"name": "big", **exact()}]}],
                "constraints": [{"requests": ["gpu/big", "gpu"], "matchAttribute": "a.io/x"}],
            },
            [],
        ),
        (constraint(), [f"{K}[0]"]),
        (constraint(requests=["gpu"]), [f"{K}[0]"]),
        (constraint(matchAttribute="numa"), [f"{K}[0].matchAttribute"]),
        (constraint(distinctAttribute="a.io/1x"), [f"{K}[0].distinctAttribute"]),
        (constraint(matchAttribute="a.io/x", distinctAttribute="a.io/y"), [f"{K}[0]"]),
        (constraint(matchAttribute="a.io/x", **cel("size(devices) == 2")), [f"{K}[0]"]),
        (constraint(**cel("size(devices) == ")), [f"{K}[0].cel.expression"]),
        (constraint(**cel("")), [f"{K}[0].cel.expression"]),
        (constraint(**cel("size(devices)")), [f"{K}[0].cel.expression"]),
        (constraint(**cel("device.driver == 'x'")), [f"{K}[0].cel.expression"]),
        (constraint(**cel(TOO_COSTLY)), [f"{K}[0].cel.expression"]),
        (constraint(**cel("true || " * 1500 + "true")), [f"{K}[0].cel.expression"]),
        ({"requests": [request()], "constraints": [{"matchAttribute": "a.io/x"}] * 32}, []),
        ({"requests": [request()], "constraints": [{"matchAttribute": "a.io/x"}] * 33}, [K]),
        # Config: opaque, parameters a JSON object, references to existing requests.
        (
            {
                "requests": [request()],
                "config": [
                    {
                        "requests": ["gpu"],
                        "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}},
                    }
                ],
            },
            [],
        ),
        ({"config": [{"opaque": {"driver": "gpu.example.com", "parameters": {}}}] * 33}, [CFG]),
        ({"config": [{}]}, [f"{CFG}[0].opaque"]),
        (
            {"config": [{"opaque": {"driver": "d.io", "parameters": [1]}}]},
            [f"{CFG}[0].opaque.parameters"],
        ),
        ({"config": [{"opaque": {"driver": "D", "parameters": {}}}]}, [f"{CFG}[0].opaque.driver"]),
        (
            {"config": [{"requests": ["nope"], "opaque": {"driver": "d.io", "parameters": {}}}]},
            [f"{CFG}[0].requests[0]"],
        ),
    ],
)
def test_claim_spec_field_paths(devices: dict[str, Any], expected: list[str]) -> None:
    assert spec_fields(devices) == expected


def test_cel_constraint_syntax_error_carries_the_cel_message() -> None:
    [err] = validate_resource_claim(claim(constraint(**cel("size(devices) == "))))
    assert err.field == f"{K}[0].cel.expression"
    assert err.type is ErrorType.INVALID
    assert err.value == "size(devices) == "
    assert err.detail.startswith("compilation failed: ")
    assert "Syntax error" in err.detail
    assert "<input>:1:18" in err.detail


def test_cel_constraint_over_the_cost_limit_is_forbidden() -> None:
    [err] = validate_resource_claim(claim(constraint(**cel(TOO_COSTLY))))
    assert (err.field, err.type) == (f"{K}[0].cel.expression", ErrorType.FORBIDDEN)
    assert err.detail == "too complex, exceeds cost limit"


def test_cel_constraint_must_return_bool() -> None:
    [err] = validate_resource_claim(claim(constraint(**cel("size(devices)"))))
    assert err.type is ErrorType.INVALID
    assert "bool" in err.detail


def test_cel_constraint_too_long() -> None:
    expression = "true" + " " * 10 * 1024
    [err] = validate_resource_claim(claim(constraint(**cel(expression))))
    assert err.type is ErrorType.TOO_LONG


def test_both_match_attribute_and_cel_is_one_invalid_constraint() -> None:
    [err] = validate_resource_claim(
        claim(constraint(matchAttribute="a.io/x", **cel("size(devices) == 2")))
    )
    assert (err.field, err.type) == (f"{K}[0]", ErrorType.INVALID)
    assert err.value == ["matchAttribute", "cel"]
    assert "exactly one of" in err.detail


def test_defaults_are_those_of_upstream() -> None:
    spec: dict[str, Any] = {
        "devices": {
            "requests": [
                {"name": "a", "exactly": exact(tolerations=[{"key": "k"}])},
                {"name": "b", "exactly": exact(allocationMode="All")},
                {"name": "c", "exactly": exact(count=3)},
                {"name": "d", "firstAvailable": [{"name": "x", **exact()}]},
            ]
        }
    }
    set_claim_spec_defaults(spec)
    requests = spec["devices"]["requests"]
    assert requests[0]["exactly"]["allocationMode"] == "ExactCount"
    assert requests[0]["exactly"]["count"] == 1
    assert requests[0]["exactly"]["tolerations"] == [{"key": "k", "operator": "Equal"}]
    assert requests[1]["exactly"] == exact(allocationMode="All")
    assert requests[2]["exactly"]["count"] == 3
    assert requests[3]["firstAvailable"][0]["allocationMode"] == "ExactCount"
    assert requests[3]["firstAvailable"][0]["count"] == 1


# -- updates of the spec --------------------------------------------------------------------------


def test_claim_spec_is_immutable() -> None:
    old = claim({"requests": [request(count=1)]})
    [err] = validate_resource_claim_update(claim({"requests": [request(count=2)]}), old)
    assert (err.field, err.detail) == ("spec", "field is immutable")
    assert validate_resource_claim_update(claim({"requests": [request(count=1)]}), old) == []


def test_unset_and_empty_lists_are_the_same_spec() -> None:
    old = claim({"requests": [request()]})
    new = claim({"requests": [request(selectors=[])], "constraints": [], "config": []})
    assert validate_resource_claim_update(new, old) == []


def test_stored_expressions_are_not_compiled_again_on_update() -> None:
    stale = constraint(**cel("devices.nosuchfield"))
    old = claim(stale)
    assert [e.field for e in validate_resource_claim(old)] == [f"{K}[0].cel.expression"]
    assert validate_resource_claim_update(claim(stale, labels={"a": "b"}), old) == []


# -- the status -----------------------------------------------------------------------------------

SPEC = {
    "requests": [
        request("gpu", count=2),
        {"name": "nic", "firstAvailable": [{"name": "fast", **exact()}]},
    ]
}


def result(device: str = "gpu-0", request: str = "gpu", **fields: Any) -> dict[str, Any]:
    return {
        "request": request,
        "driver": "gpu.example.com",
        "pool": "node-1",
        "device": device,
        **fields,
    }


def allocation(*results: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"devices": {"results": list(results or [result()])}, **fields}


def device_status(device: str = "gpu-0", **fields: Any) -> dict[str, Any]:
    return {"driver": "gpu.example.com", "pool": "node-1", "device": device, **fields}


def condition(type_: str, status: str = "True", reason: str = "AttachRequested") -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


NEEDS_ATTACHING = condition("kubernetes.io/needs-attaching")
FABRIC = device_status(nodeName="node-1", conditions=[NEEDS_ATTACHING])


def consumer(uid: str = "u1", **fields: Any) -> dict[str, Any]:
    return {"resource": "pods", "name": "pod-0", "uid": uid, **fields}


def status_fields(
    status: dict[str, Any], old_status: dict[str, Any] | None = None, **meta: Any
) -> list[str]:
    new = claim(SPEC, status, **meta)
    old = claim(SPEC, old_status, **meta)
    return [e.field for e in validate_resource_claim_status_update(new, old)]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({}, []),
        ({"allocation": allocation()}, []),
        # KEP-5007: nodeName and a needs-attaching condition on an allocated device.
        ({"allocation": allocation(), "devices": [FABRIC]}, []),
        (
            {
                "allocation": allocation(
                    result(
                        bindingConditions=["kubernetes.io/is-attached"],
                        bindingFailureConditions=["kubernetes.io/attach-failed"],
                    ),
                    allocationTimestamp="2026-01-01T00:00:00Z",
                ),
                "devices": [
                    device_status(
                        nodeName="node-1",
                        conditions=[
                            NEEDS_ATTACHING,
                            condition("kubernetes.io/is-attached", "False", "Attaching"),
                        ],
                    )
                ],
            },
            [],
        ),
        # Every status entry must be an allocated device, once.
        ({"allocation": allocation(), "devices": [device_status("gpu-1")]}, [f"{DEV}[0]"]),
        ({"devices": [FABRIC]}, [f"{DEV}[0]"]),
        ({"allocation": allocation(), "devices": [FABRIC, device_status()]}, [f"{DEV}[1]"]),
        (
            {
                "allocation": allocation(result(shareID=SHARE)),
                "devices": [device_status(shareID=SHARE)],
            },
            [],
        ),
        (
            {"allocation": allocation(result(shareID=SHARE)), "devices": [device_status()]},
            [f"{DEV}[0]"],
        ),
        (
            {"allocation": allocation(), "devices": [device_status(shareID=SHARE.upper())]},
            [f"{DEV}[0].shareID", f"{DEV}[0]"],
        ),
        (
            {"allocation": allocation(), "devices": [device_status(nodeName="Node_1")]},
            [f"{DEV}[0].nodeName"],
        ),
        (
            {
                "allocation": allocation(),
                "devices": [
                    device_status(conditions=[condition(f"example.com/c{i}") for i in range(9)])
                ],
            },
            [f"{DEV}[0].conditions"],
        ),
        (
            {
                "allocation": allocation(),
                "devices": [
                    device_status(conditions=[condition("kubernetes.io/x", reason="not valid")])
                ],
            },
            [f"{DEV}[0].conditions[0].reason"],
        ),
        (
            {
                "allocation": allocation(),
                "devices": [device_status(conditions=[NEEDS_ATTACHING, NEEDS_ATTACHING])],
            },
            [f"{DEV}[0].conditions[1].type"],
        ),
        ({"allocation": allocation(), "devices": [device_status(data={"a": [1, 2]})]}, []),
        ({"allocation": allocation(), "devices": [device_status(data=[1])]}, [f"{DEV}[0].data"]),
        (
            {"allocation": allocation(), "devices": [device_status(data={"k": "x" * 10 * 1024})]},
            [f"{DEV}[0].data"],
        ),
        (
            {
                "allocation": allocation(),
                "devices": [
                    device_status(
                        networkData={
                            "interfaceName": "eth1",
                            "ips": ["10.0.0.5/24", "2001:db8::5/64"],
                            "hardwareAddress": "aa:bb:cc:dd:ee:ff",
                        }
                    )
                ],
            },
            [],
        ),
        (
            {
                "allocation": allocation(),
                "devices": [
                    device_status(networkData={"ips": ["10.0.0.5", "10.0.0.6/24", "10.0.0.6/24"]})
                ],
            },
            [f"{DEV}[0].networkData.ips[0]", f"{DEV}[0].networkData.ips[2]"],
        ),
        (
            {
                "allocation": allocation(),
                "devices": [
                    device_status(networkData={"ips": [f"10.0.0.{i}/24" for i in range(17)]})
                ],
            },
            [f"{DEV}[0].networkData.ips"],
        ),
        (
            {
                "allocation": allocation(),
                "devices": [
                    device_status(
                        networkData={"interfaceName": "i" * 257, "hardwareAddress": "a" * 129}
                    )
                ],
            },
            [f"{DEV}[0].networkData.interfaceName", f"{DEV}[0].networkData.hardwareAddress"],
        ),
        # A new allocation: results name requests of the claim and valid devices.
        ({"allocation": allocation(result(request="nic/fast"))}, []),
        ({"allocation": allocation(result(request="nope"))}, [f"{RES}[0].request"]),
        ({"allocation": allocation(result(request="nic/slow"))}, [f"{RES}[0].request"]),
        (
            {"allocation": allocation(result(device="GPU_0", driver="Gpu", pool="a//b"))},
            [f"{RES}[0].driver", f"{RES}[0].pool", f"{RES}[0].device"],
        ),
        ({"allocation": allocation(*[result(f"gpu-{i}") for i in range(33)])}, [RES]),
        ({"allocation": allocation(result(shareID="not-a-uuid"))}, [f"{RES}[0].shareID"]),
        (
            {
                "allocation": allocation(
                    result(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}])
                )
            },
            [f"{RES}[0].tolerations[0].value"],
        ),
        (
            {"allocation": allocation(result(bindingConditions=["kubernetes.io/is-attached"]))},
            [f"{RES}[0].bindingFailureConditions"],
        ),
        (
            {
                "allocation": allocation(
                    result(bindingFailureConditions=["kubernetes.io/attach-failed"])
                )
            },
            [f"{RES}[0].bindingConditions"],
        ),
        (
            {
                "allocation": allocation(
                    result(bindingConditions=["a.io/x"], bindingFailureConditions=["a.io/x"])
                )
            },
            [f"{RES}[0].bindingFailureConditions[0]"],
        ),
        (
            {
                "allocation": allocation(
                    result(
                        bindingConditions=[f"a.io/c{i}" for i in range(5)],
                        bindingFailureConditions=["a.io/f"],
                    )
                )
            },
            [f"{RES}[0].bindingConditions"],
        ),
        (
            {
                "allocation": allocation(
                    result(
                        bindingConditions=["a.io/x", "a.io/x"], bindingFailureConditions=["a.io/f"]
                    )
                )
            },
            [f"{RES}[0].bindingConditions[1]"],
        ),
        (
            {"allocation": allocation(result(consumedCapacity={"a/b/c": "1"}))},
            [f"{RES}[0].consumedCapacity[a/b/c]"],
        ),
        (
            {
                "allocation": {
                    "devices": {
                        "results": [result()],
                        "config": [
                            {
                                "source": "FromClass",
                                "opaque": {"driver": "gpu.example.com", "parameters": {}},
                            },
                            {
                                "source": "FromClaim",
                                "requests": ["gpu"],
                                "opaque": {"driver": "gpu.example.com", "parameters": {}},
                            },
                        ],
                    }
                }
            },
            [],
        ),
        (
            {"allocation": {"devices": {"config": [{"source": "FromClaim", "requests": ["x"]}]}}},
            [
                "status.allocation.devices.config[0].requests[0]",
                "status.allocation.devices.config[0].opaque",
            ],
        ),
        (
            {
                "allocation": allocation(
                    nodeSelector={
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                                ]
                            }
                        ]
                    }
                )
            },
            [],
        ),
        (
            {"allocation": allocation(nodeSelector={"nodeSelectorTerms": []})},
            ["status.allocation.nodeSelector.nodeSelectorTerms"],
        ),
        # reservedFor: needs an allocation, unique uids, at most 256, complete references.
        ({"allocation": allocation(), "reservedFor": [consumer()]}, []),
        ({"reservedFor": [consumer()]}, ["status.reservedFor"]),
        (
            {"allocation": allocation(), "reservedFor": [consumer(), consumer()]},
            ["status.reservedFor[1].uid"],
        ),
        (
            {"allocation": allocation(), "reservedFor": [consumer(name="", apiGroup="Bad_Group")]},
            ["status.reservedFor[0].apiGroup", "status.reservedFor[0].name"],
        ),
        (
            {"allocation": allocation(), "reservedFor": [consumer(f"u{i}") for i in range(257)]},
            ["status.reservedFor"],
        ),
    ],
)
def test_claim_status_field_paths(status: dict[str, Any], expected: list[str]) -> None:
    assert status_fields(status) == expected


def test_device_that_is_not_allocated_says_so() -> None:
    new = claim(SPEC, {"allocation": allocation(), "devices": [device_status("gpu-7")]})
    [err] = validate_resource_claim_status_update(new, claim(SPEC))
    assert err.type is ErrorType.INVALID
    assert err.value == "gpu.example.com/node-1/gpu-7"
    assert err.detail == "must be an allocated device in the claim"


def test_allocation_is_immutable_once_set_but_may_be_removed() -> None:
    old = {"allocation": allocation()}
    assert status_fields({"allocation": allocation(result("gpu-1"))}, old) == ["status.allocation"]
    assert status_fields({"allocation": allocation()}, old) == []
    assert status_fields({}, old) == []
    assert status_fields({"reservedFor": [consumer()]}, {**old, "reservedFor": [consumer()]}) == [
        "status.reservedFor"
    ]


def test_stored_allocation_is_not_validated_again() -> None:
    # Accepted under older rules: a request name the claim no longer checks against.
    old = {"allocation": allocation(result(request="legacy"))}
    assert status_fields(old) == [f"{RES}[0].request"]
    assert status_fields({**old, "reservedFor": [consumer()]}, old) == []


def test_no_new_consumers_while_the_claim_is_being_deleted() -> None:
    deleting = {"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["example.com/f"]}
    old = {"allocation": allocation(), "reservedFor": [consumer("u1")]}
    added = {**old, "reservedFor": [consumer("u1"), consumer("u2")]}
    assert status_fields(added, old, **deleting) == ["status.reservedFor"]
    assert status_fields(added, old) == []
    assert status_fields({**old, "reservedFor": []}, old, **deleting) == []


# -- templates ------------------------------------------------------------------------------------


def template(devices: dict[str, Any], **meta: Any) -> ResourceClaimTemplate:
    return ResourceClaimTemplate.model_validate(
        {
            "metadata": {"name": "t", "namespace": "default"},
            "spec": {"metadata": meta or None, "spec": {"devices": devices}},
        }
    )


@pytest.mark.parametrize(
    ("devices", "meta", "expected"),
    [
        (constraint(**cel(KEP_CONNECTED)), {"labels": {"app": "mla"}}, []),
        (
            constraint(**cel("size(devices) == ")),
            {},
            ["spec.spec.devices.constraints[0].cel.expression"],
        ),
        ({"requests": [request("Bad")]}, {}, ["spec.spec.devices.requests[0].name"]),
        ({}, {"labels": {"app": "not valid!"}}, ["spec.metadata.labels[app]"]),
        ({}, {"annotations": {"bad key!": "x"}}, ["spec.metadata.annotations"]),
    ],
)
def test_template_field_paths(
    devices: dict[str, Any], meta: dict[str, Any], expected: list[str]
) -> None:
    assert [
        e.field for e in validate_resource_claim_template(template(devices, **meta))
    ] == expected


def test_template_spec_is_immutable() -> None:
    old = template({"requests": [request()]}, labels={"a": "1"})
    changed = template({"requests": [request()]}, labels={"a": "2"})
    [err] = validate_resource_claim_template_update(changed, old)
    assert (err.field, err.detail) == ("spec", "field is immutable")
    same = template({"requests": [request()]}, labels={"a": "1"})
    assert validate_resource_claim_template_update(same, old) == []


# -- through the registry ---------------------------------------------------------------------------

OPTS = WriteOptions()


@pytest.fixture
def claims(store: SQLiteStore) -> Registry:
    return Registry(ResourceClaimStrategy.upstream(), store)


def claim_body(name: str, devices: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": devices},
    }


async def test_create_defaults_the_spec_and_drops_status(claims: Registry) -> None:
    body = claim_body(
        "c", {"requests": [{"name": "gpu", "exactly": exact(tolerations=[{"key": "k"}])}]}
    )
    body["status"] = {"allocation": allocation()}
    created = (await claims.create("default", body, OPTS)).obj.copy()
    assert created["spec"]["devices"]["requests"][0]["exactly"] == exact(
        allocationMode="ExactCount", count=1, tolerations=[{"key": "k", "operator": "Equal"}]
    )
    assert "status" not in created


async def test_status_subresource_accepts_kep5007_status_of_allocated_devices(
    claims: Registry,
) -> None:
    created = (await claims.create("default", claim_body("c", SPEC), OPTS)).obj.copy()
    sent = copy.deepcopy(created)
    sent["status"] = {"allocation": allocation(), "devices": [FABRIC]}
    written = (await StatusSubresource(claims).update("default", "c", sent, OPTS)).obj.copy()
    assert written["status"]["devices"] == [FABRIC]
    assert written["spec"] == created["spec"]
    assert claim_state(written) == "allocated"


async def test_status_subresource_rejects_status_of_a_device_not_allocated(
    claims: Registry,
) -> None:
    await claims.create("default", claim_body("c", SPEC), OPTS)
    patch = {
        "status": {
            "allocation": allocation(),
            "devices": [device_status("gpu-9", nodeName="node-1")],
        }
    }
    with pytest.raises(StatusError) as info:
        await StatusSubresource(claims).patch("default", "c", _json(patch), MERGE_PATCH, OPTS)
    err = info.value
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.details is not None
    assert [c["field"] for c in err.details["causes"]] == [f"{DEV}[0]"]
    assert "status" not in (await claims.get("default", "c")).copy()


async def test_allocation_written_once_cannot_be_replaced_through_the_registry(
    claims: Registry,
) -> None:
    await claims.create("default", claim_body("c", SPEC), OPTS)
    first = {"status": {"allocation": allocation()}}
    await StatusSubresource(claims).patch("default", "c", _json(first), MERGE_PATCH, OPTS)
    other = {"status": {"allocation": allocation(result("gpu-1"))}}
    with pytest.raises(StatusError) as info:
        await StatusSubresource(claims).patch("default", "c", _json(other), MERGE_PATCH, OPTS)
    assert info.value.details is not None
    assert [c["field"] for c in info.value.details["causes"]] == ["status.allocation"]


async def test_spec_change_is_rejected_through_the_registry(claims: Registry) -> None:
    await claims.create("default", claim_body("c", SPEC), OPTS)
    change = {"spec": {"devices": {"requests": [request("gpu", count=3)]}}}
    with pytest.raises(StatusError) as info:
        await claims.patch("default", "c", _json(change), MERGE_PATCH, OPTS)
    assert info.value.code == 422
    assert info.value.details is not None
    assert [c["field"] for c in info.value.details["causes"]] == ["spec"]


async def test_update_without_the_defaults_is_not_a_change(claims: Registry) -> None:
    body = claim_body("c", {"requests": [request(tolerations=[{"key": "k"}])]})
    created = (await claims.create("default", copy.deepcopy(body), OPTS)).obj.copy()
    body["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    body["metadata"]["labels"] = {"a": "b"}
    updated = (await claims.update("default", "c", body, OPTS)).obj.copy()
    assert updated["spec"] == created["spec"]
    assert updated["metadata"]["generation"] == 1
    assert updated["metadata"]["labels"] == {"a": "b"}


def _json(value: Any) -> bytes:
    return orjson.dumps(value)


@pytest.mark.parametrize(
    ("status", "deleted", "state"),
    [
        (None, False, "pending"),
        ({"allocation": allocation()}, False, "allocated"),
        ({"allocation": allocation(), "reservedFor": [consumer()]}, False, "allocated,reserved"),
        (None, True, "deleted"),
        (
            {"allocation": allocation(), "reservedFor": [consumer()]},
            True,
            "deleted,allocated,reserved",
        ),
    ],
)
def test_claim_state_column(status: dict[str, Any] | None, deleted: bool, state: str) -> None:
    obj: dict[str, Any] = {"metadata": {"name": "c"}, "spec": {}}
    if deleted:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if status is not None:
        obj["status"] = status
    assert claim_state(obj) == state

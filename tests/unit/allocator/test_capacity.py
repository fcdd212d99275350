"""The allocator with consumable capacity and shared devices, binding conditions and node
selection, checked against upstream's allocator cases (kubernetes/dynamic-resource-allocation
``structured/internal/allocatortesting/allocator_testing.go`` and
``lexicographical_testing.go``: the case each test follows is named in it)."""

from __future__ import annotations

import uuid
from typing import Any

from apiserver.allocator import Allocator, NodeResult, parse_claim
from apiserver.cel.quantity import parse
from apiserver.pools import Node, Pools, summary_of
from apiserver.toolkit import JSON
from tests.unit import builders
from tests.unit.allocator.check import held_devices, valid
from tests.unit.builders import pools_of

DRIVER = "dra.example.com"
NODE = Node("node-1", {"region": "r1", "planet": "earth"})
CLASSES = {"nic": {"spec": {}}}


def slice_obj(name: str, devices: list[JSON], pool: str = "pool-1", **where: Any) -> JSON:
    """A slice of ``pool`` on node-1, or placed as ``where`` says."""
    return builders.slice_obj(name, devices, driver=DRIVER, pool=pool, node="node-1", **where)


def nic(name: str, bandwidth: str = "10Gi", **extra: Any) -> JSON:
    policy = {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}
    return {
        "name": name,
        "allowMultipleAllocations": True,
        "capacity": {"bandwidth": {"value": bandwidth, "requestPolicy": policy}},
        **extra,
    }


def claim(name: str, *requests: JSON) -> Any:
    return parse_claim(name, {"devices": {"requests": list(requests)}})


def request(name: str = "req-0", count: int = 1, capacity: str | None = None) -> JSON:
    exactly: JSON = {"deviceClassName": "nic", "count": count}
    if capacity is not None:
        exactly["capacity"] = {"requests": {"bandwidth": capacity}}
    return {"name": name, "exactly": exactly}


def checked(space: Pools, claims: list[Any], result: NodeResult) -> NodeResult:
    """The answer, after the independent checker found it valid."""
    assert result.feasible, result.reasons
    allocations = [c.allocation for c in result.claims]
    problem = valid(space, CLASSES, NODE, claims, allocations, held_devices(space))
    assert problem is None, (problem, allocations)
    return result


def results(result: NodeResult, index: int = 0) -> list[JSON]:
    allocation = result.claims[index].allocation
    assert allocation is not None
    out: list[JSON] = allocation["devices"]["results"]
    return out


def stored(name: str, result: NodeResult) -> JSON:
    """A stored claim holding the allocation the review gave."""
    return {
        "metadata": {"name": name},
        "spec": {},
        "status": {"allocation": result.claims[0].allocation},
    }


def nanos(text: str) -> int:
    return parse(text).nanos


def test_several_claims_share_a_device_while_its_capacity_lasts() -> None:
    """``with-allocated-capacity-use-remaining``: shares of one device, each with its own
    shareID and the capacity it consumes, until what is left is too little."""
    shared = pools_of(slice_obj("s1", [nic("nic-0")]))
    claims = [claim("a", request(capacity="4Gi")), claim("b", request(capacity="2500Mi"))]
    found = checked(shared, claims, Allocator(shared, CLASSES).allocate(claims, NODE))
    first, second = results(found, 0), results(found, 1)
    assert [r["device"] for r in first + second] == ["nic-0", "nic-0"]
    assert first[0]["consumedCapacity"] == {"bandwidth": "4Gi"}
    assert second[0]["consumedCapacity"] == {"bandwidth": "3Gi"}  # rounded up to a step
    ids = {first[0]["shareID"], second[0]["shareID"]}
    assert len(ids) == 2
    assert all(str(uuid.UUID(i)) == i for i in ids)
    # 7Gi of 10Gi are consumed once both are stored: 3Gi fit, 4Gi do not.
    after = pools_of(
        slice_obj("s1", [nic("nic-0")]),
        claims=(stored("a", found), {"status": {"allocation": found.claims[1].allocation}}),
    )
    three = [claim("c", request(capacity="3Gi"))]
    checked(after, three, Allocator(after, CLASSES).allocate(three, NODE))
    refused = Allocator(after, CLASSES).allocate([claim("c", request(capacity="4Gi"))], NODE)
    assert not refused.feasible
    assert "capacity exhausted 1" in "\n".join(refused.reasons)


def test_a_request_without_capacity_consumes_the_default() -> None:
    """``with-policy-without-capacity-request``: the default (1Gi) is consumed."""
    found = Allocator(pools_of(slice_obj("s1", [nic("nic-0")])), CLASSES).allocate(
        [claim("a", request())], NODE
    )
    assert results(found)[0]["consumedCapacity"] == {"bandwidth": "1Gi"}


def test_a_capacity_without_policy_is_taken_whole_when_not_requested() -> None:
    """``without-policy-without-capacity-request-block``: the first share takes it all, so
    a second share does not fit."""
    device = {
        "name": "dev-0",
        "allowMultipleAllocations": True,
        "capacity": {"memory": {"value": "8Gi"}},
    }
    found = Allocator(pools_of(slice_obj("s1", [device])), CLASSES).allocate(
        [claim("a", request()), claim("b", request())], NODE
    )
    assert not found.feasible
    single = Allocator(pools_of(slice_obj("s1", [device])), CLASSES).allocate(
        [claim("a", request())], NODE
    )
    assert results(single)[0]["consumedCapacity"] == {"memory": "8Gi"}


def test_one_request_never_takes_one_device_twice_but_two_requests_may() -> None:
    """``with-subrequest`` and upstream's start location: count 2 needs two devices; two
    requests of one claim may each take a share of the same device."""
    one = pools_of(slice_obj("s1", [nic("nic-0")]))
    assert not Allocator(one, CLASSES).allocate([claim("a", request(count=2))], NODE).feasible
    pair = [claim("a", request("req-0", capacity="2Gi"), request("req-1", capacity="2Gi"))]
    both = checked(one, pair, Allocator(one, CLASSES).allocate(pair, NODE))
    assert [r["device"] for r in results(both)] == ["nic-0", "nic-0"]
    two = pools_of(slice_obj("s1", [nic("nic-0"), nic("nic-1")]))
    found = Allocator(two, CLASSES).allocate([claim("a", request(count=2))], NODE)
    assert [r["device"] for r in results(found)] == ["nic-0", "nic-1"]


def test_the_next_device_serves_when_the_first_has_too_little_left() -> None:
    """``with-allocated-capacity-next-device`` and ``with-multi-allocatable-device-backtrack``."""
    two = pools_of(slice_obj("s1", [nic("nic-0", "4Gi"), nic("nic-1", "8Gi")]))
    found = Allocator(two, CLASSES).allocate(
        [claim("a", request(capacity="3Gi")), claim("b", request(capacity="6Gi"))], NODE
    )
    assert found.feasible
    assert [results(found, i)[0]["device"] for i in (0, 1)] == ["nic-0", "nic-1"]
    # a first pick that starves a later claim is undone
    crossed = Allocator(two, CLASSES).allocate(
        [claim("a", request(capacity="2Gi")), claim("b", request(capacity="7Gi"))], NODE
    )
    assert crossed.feasible


def test_capacity_requests_on_dedicated_devices() -> None:
    """``dedicated-device-with-consumable-capacity-request``: a dedicated device serves a
    request up to its value, without shareID or consumedCapacity, and only once."""
    gpu = {"name": "gpu-0", "capacity": {"memory": {"value": "80Gi"}}}
    space = pools_of(slice_obj("s1", [gpu]))
    big = {
        "name": "req-0",
        "exactly": {"deviceClassName": "nic", "capacity": {"requests": {"memory": "1Ti"}}},
    }
    refused = Allocator(space, CLASSES).allocate([claim("a", big)], NODE)
    assert not refused.feasible
    assert "capacity insufficient 1" in "\n".join(refused.reasons)
    fits = dict(big, exactly=dict(big["exactly"], capacity={"requests": {"memory": "40Gi"}}))
    found = Allocator(space, CLASSES).allocate([claim("a", fits)], NODE)
    assert found.feasible
    assert "shareID" not in results(found)[0]
    assert (
        not Allocator(space, CLASSES).allocate([claim("a", fits), claim("b", fits)], NODE).feasible
    )


def test_a_capacity_the_device_lacks_excludes_it() -> None:
    """``with-missing-capacity-request``."""
    asks = {
        "name": "req-0",
        "exactly": {"deviceClassName": "nic", "capacity": {"requests": {"queues": "1"}}},
    }
    result = Allocator(pools_of(slice_obj("s1", [nic("nic-0")])), CLASSES).allocate(
        [claim("a", asks)], NODE
    )
    assert not result.feasible


def test_a_device_allocated_whole_is_not_shared() -> None:
    """``not-allocate-multi-allocatable-device-which-already-dedicated``: a result without a
    shareID takes the device whole."""
    dedicated = {
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "r", "driver": DRIVER, "pool": "pool-1", "device": "nic-0"}
                    ]
                }
            }
        }
    }
    taken = pools_of(slice_obj("s1", [nic("nic-0")]), claims=(dedicated,))
    assert not Allocator(taken, CLASSES).allocate([claim("a", request())], NODE).feasible


def test_all_mode_leaves_out_devices_without_enough_capacity() -> None:
    """``allocation-mode-all-filter-out-insufficient-capacity``."""
    space = pools_of(slice_obj("s1", [nic("nic-0", "2Gi"), nic("nic-1", "8Gi")]))
    every = {
        "name": "req-0",
        "exactly": {
            "deviceClassName": "nic",
            "allocationMode": "All",
            "capacity": {"requests": {"bandwidth": "4Gi"}},
        },
    }
    found = Allocator(space, CLASSES).allocate([claim("a", every)], NODE)
    assert found.feasible
    assert [r["device"] for r in results(found)] == ["nic-1"]


def test_counters_of_a_shared_device_are_consumed_once() -> None:
    """``allow-multiple-allocations-with-partitionable-device``: shares of a device that
    consumes counters take its counters once, and give them back with the last share."""
    halves = {
        "metadata": {"name": "s1", "uid": "s1"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "node-1",
            "sharedCounters": [{"name": "mem", "counters": {"gb": {"value": "8"}}}],
            "devices": [
                nic(
                    "nic-0",
                    consumesCounters=[{"counterSet": "mem", "counters": {"gb": {"value": "8"}}}],
                ),
                {
                    "name": "whole",
                    "consumesCounters": [{"counterSet": "mem", "counters": {"gb": {"value": "8"}}}],
                },
            ],
        },
    }
    space = pools_of(halves)
    nics = {
        "nic": {"spec": {"selectors": [{"cel": {"expression": "device.allowMultipleAllocations"}}]}}
    }
    allocator = Allocator(space, nics)
    shares = allocator.allocate([claim(f"c{i}", request()) for i in range(3)], NODE)
    assert shares.feasible  # three shares, counters taken once
    assert allocator.used == {k: 0 for k in allocator.used}  # all given back after the search
    stored_share = {"status": {"allocation": shares.claims[0].allocation}}
    after = Allocator(pools_of(halves, claims=(stored_share,)), {"nic": {"spec": {}}})
    whole = {
        "name": "req-0",
        "exactly": {
            "deviceClassName": "nic",
            "selectors": [{"cel": {"expression": "!device.allowMultipleAllocations"}}],
        },
    }
    assert not after.allocate([claim("w", whole)], NODE).feasible  # the share took the memory
    assert after.allocate([claim("c", request())], NODE).feasible  # more shares still fit


def test_pool_status_counts_a_shared_device_once_as_allocated() -> None:
    """A device with shares counts once, as allocated; one without is available."""
    space = pools_of(slice_obj("s1", [nic("nic-0"), nic("nic-1")]))
    found = Allocator(space, CLASSES).allocate(
        [claim("a", request(capacity="2Gi")), claim("b", request(capacity="2Gi"))], NODE
    )
    claims = tuple({"status": {"allocation": c.allocation}} for c in found.claims)
    after = pools_of(slice_obj("s1", [nic("nic-0"), nic("nic-1")]), claims=claims)
    state = after.states[(DRIVER, "pool-1")]
    assert state.shared["nic-0"]["bandwidth"] == nanos("4Gi")
    summary = summary_of(state.gathered, state.allocated | state.reserved | state.shared.keys())
    assert (summary.total, summary.allocated, summary.available) == (2, 1, 1)


# -- binding conditions --------------------------------------------------------------------


def bound(name: str) -> JSON:
    return {
        "name": name,
        "bindingConditions": ["IsPrepare"],
        "bindingFailureConditions": ["BindingFailed"],
    }


def test_pools_with_binding_conditions_are_tried_last() -> None:
    """``lexicographical-sorting-pools-with-binding-conditions``."""
    space = pools_of(
        slice_obj("slice-1", [bound("device-1")], pool="pool-1"),
        slice_obj("slice-3", [{"name": "device-3"}], pool="pool-3"),
        slice_obj("slice-2", [{"name": "device-2"}], pool="pool-2"),
    )
    found = Allocator(space, CLASSES).allocate([claim("a", request(count=2))], NODE)
    assert [(r["pool"], r["device"]) for r in results(found)] == [
        ("pool-2", "device-2"),
        ("pool-3", "device-3"),
    ]


def test_within_a_pool_the_device_order_stands() -> None:
    """``lexicographical-sorting-slices-with-binding-conditions``: one pool; its device with
    binding conditions comes first, as its slice does, and its conditions are copied."""
    space = Pools(
        pools_of(
            {
                **slice_obj("slice-1", [bound("device-1")]),
                "spec": {
                    **slice_obj("slice-1", [bound("device-1")])["spec"],
                    "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 3},
                },
            },
            {
                **slice_obj("slice-3", [{"name": "device-3"}]),
                "spec": {
                    **slice_obj("slice-3", [{"name": "device-3"}])["spec"],
                    "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 3},
                },
            },
            {
                **slice_obj("slice-2", [{"name": "device-2"}]),
                "spec": {
                    **slice_obj("slice-2", [{"name": "device-2"}])["spec"],
                    "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 3},
                },
            },
        ).states.values()
    )
    found = Allocator(space, CLASSES).allocate([claim("a", request(count=2))], NODE)
    got = results(found)
    assert [r["device"] for r in got] == ["device-1", "device-2"]
    assert got[0]["bindingConditions"] == ["IsPrepare"]
    assert got[0]["bindingFailureConditions"] == ["BindingFailed"]
    assert "bindingConditions" not in got[1]
    assert found.score == 50  # the KEP-5007 score still counts the device as to-be-attached


# -- node selection ------------------------------------------------------------------------


def selected(key: str, value: str) -> JSON:
    return {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
        ]
    }


def test_the_node_selector_is_one_term_anding_every_device() -> None:
    """``network-attached-device`` / ``local-and-network-attached-devices``: devices behind
    two different selectors need a node that both select: one term with both requirements."""
    space = pools_of(
        slice_obj(
            "a", [{"name": "device-1"}], pool="pool-a", nodeSelector=selected("region", "r1")
        ),
        slice_obj(
            "b", [{"name": "device-2"}], pool="pool-b", nodeSelector=selected("planet", "earth")
        ),
        slice_obj("c", [{"name": "device-3"}], pool="pool-c", allNodes=True),
    )
    found = Allocator(space, CLASSES).allocate([claim("a", request(count=3))], NODE)
    allocation = found.claims[0].allocation
    assert allocation is not None
    assert allocation["nodeSelector"] == {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "region", "operator": "In", "values": ["r1"]},
                    {"key": "planet", "operator": "In", "values": ["earth"]},
                ]
            }
        ]
    }
    # the same requirement from two devices is written once
    same = pools_of(
        slice_obj(
            "a",
            [{"name": "device-1"}, {"name": "device-2"}],
            pool="pool-a",
            nodeSelector=selected("region", "r1"),
        )
    )
    both = Allocator(same, CLASSES).allocate([claim("a", request(count=2))], NODE)
    allocation = both.claims[0].allocation
    assert allocation is not None
    assert allocation["nodeSelector"] == selected("region", "r1")


def test_all_nodes_devices_need_no_selector_and_a_local_device_pins() -> None:
    """``many-network-attached-devices`` with allNodes: usable everywhere; a node-local or
    ``bindsToNode`` device pins the allocation to the node (``node-restriction``)."""
    everywhere = pools_of(slice_obj("c", [{"name": "device-3"}], pool="pool-c", allNodes=True))
    found = Allocator(everywhere, CLASSES).allocate([claim("a", request())], NODE)
    allocation = found.claims[0].allocation
    assert allocation is not None
    assert "nodeSelector" not in allocation
    binds = pools_of(
        slice_obj(
            "c",
            [{"name": "device-1", "bindsToNode": True}],
            pool="pool-c",
            nodeSelector=selected("planet", "earth"),
        )
    )
    pinned = Allocator(binds, CLASSES).allocate([claim("a", request())], NODE).claims[0].allocation
    assert pinned is not None
    assert pinned["nodeSelector"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
        ]
    }


def test_per_device_node_selection_ands_each_device_selector() -> None:
    """``partitionable-devices-per-device-node-selection-node-selector-multiple-devices``."""
    per_device = slice_obj(
        "s",
        [
            {"name": "device-1", "nodeSelector": selected("region", "r1")},
            {"name": "device-2", "nodeSelector": selected("planet", "earth")},
        ],
        perDeviceNodeSelection=True,
    )
    found = Allocator(pools_of(per_device), CLASSES).allocate([claim("a", request(count=2))], NODE)
    allocation = found.claims[0].allocation
    assert allocation is not None
    terms = allocation["nodeSelector"]["nodeSelectorTerms"]
    assert len(terms) == 1
    assert [r["key"] for r in terms[0]["matchExpressions"]] == ["region", "planet"]


def test_a_zero_default_shares_without_limit_and_forbids_other_amounts() -> None:
    """``with-zero-request-policy`` and ``violates-zero-request-policy``: default 0 among
    validValues [0]; requests without capacity consume 0 each, a request for 1 is refused."""
    device = {
        "name": "device-1",
        "allowMultipleAllocations": True,
        "capacity": {
            "capacity-0": {"value": "1", "requestPolicy": {"default": "0", "validValues": ["0"]}}
        },
    }
    space = pools_of(slice_obj("s1", [device]))
    two = [claim("a", request()), claim("b", request())]
    found = checked(space, two, Allocator(space, CLASSES).allocate(two, NODE))
    assert [results(found, i)[0]["consumedCapacity"] for i in (0, 1)] == [{"capacity-0": "0"}] * 2
    one = {
        "name": "req-0",
        "exactly": {"deviceClassName": "nic", "capacity": {"requests": {"capacity-0": "1"}}},
    }
    assert not Allocator(space, CLASSES).allocate([claim("a", one)], NODE).feasible


def test_an_allocated_claim_in_the_same_review_keeps_its_share_and_leaves_the_rest() -> None:
    """A review of a stored claim holding a share of a device, beside a new claim: the
    stored share counts once (from the pools), and the new claim may share the device."""
    space = pools_of(slice_obj("s1", [nic("nic-0")]))
    first = Allocator(space, CLASSES).allocate([claim("a", request(capacity="6Gi"))], NODE)
    holder = {
        "metadata": {"name": "a", "namespace": "default"},
        "spec": {"devices": {"requests": [request(capacity="6Gi")]}},
        "status": {"allocation": first.claims[0].allocation},
    }
    after = pools_of(slice_obj("s1", [nic("nic-0")]), claims=(holder,))
    both = [parse_claim("default/a", holder), claim("b", request(capacity="4Gi"))]
    found = Allocator(after, CLASSES).allocate(both, NODE)
    assert found.feasible, found.reasons
    assert results(found, 1)[0]["device"] == "nic-0"
    over = [parse_claim("default/a", holder), claim("b", request(capacity="5Gi"))]
    assert not Allocator(after, CLASSES).allocate(over, NODE).feasible


def test_many_network_attached_devices_make_one_term() -> None:
    """``many-network-attached-devices``: selectors by region, for all nodes, by planet, and
    by ``metadata.name`` (a selector, not ``nodeName``): one term with the two label
    requirements and the field requirement."""
    by_name = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
        ]
    }
    space = pools_of(
        slice_obj(
            "s1", [{"name": "device-1"}], pool="pool-1", nodeSelector=selected("region", "r1")
        ),
        slice_obj("s2", [{"name": "device-1"}], pool="pool-2", allNodes=True),
        slice_obj(
            "s3", [{"name": "device-1"}], pool="pool-3", nodeSelector=selected("planet", "earth")
        ),
        slice_obj("s4", [{"name": "device-1"}], pool="pool-4", nodeSelector=by_name),
    )
    found = Allocator(space, CLASSES).allocate([claim("a", request(count=4))], NODE)
    allocation = found.claims[0].allocation
    assert allocation is not None
    assert allocation["nodeSelector"] == {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "region", "operator": "In", "values": ["r1"]},
                    {"key": "planet", "operator": "In", "values": ["earth"]},
                ],
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}],
            }
        ]
    }


def test_distinct_attribute_across_shares() -> None:
    """``distinct-constraint-one/two-multi-allocatable-device(s)-with-distinct-constraint``:
    two requests of one claim may not share one device when their values must differ."""

    def labelled(name: str, value: str) -> JSON:
        return {
            "name": name,
            "allowMultipleAllocations": True,
            "attributes": {"stringAttribute": {"string": value}},
            "capacity": {"bandwidth": {"value": "4"}},
        }

    def both(space: Pools) -> NodeResult:
        spec = {
            "devices": {
                "requests": [request("req-0", capacity="2"), request("req-1", capacity="2")],
                "constraints": [{"distinctAttribute": f"{DRIVER}/stringAttribute"}],
            }
        }
        return Allocator(space, CLASSES).allocate([parse_claim("a", spec)], NODE)

    assert not both(pools_of(slice_obj("s1", [labelled("device-1", "v1")]))).feasible
    two = both(pools_of(slice_obj("s1", [labelled("device-1", "v1"), labelled("device-2", "v2")])))
    assert [r["device"] for r in results(two)] == ["device-1", "device-2"]


def _plain(name: str, value: str) -> JSON:
    return {
        "name": name,
        "allowMultipleAllocations": True,
        "capacity": {"capacity-0": {"value": value}},
    }


def _stored_share(device_name: str, amount: str) -> JSON:
    result = {
        "request": "r",
        "driver": DRIVER,
        "pool": "pool-1",
        "device": device_name,
        "shareID": "00000000-0000-4000-8000-000000000001",
        "consumedCapacity": {"capacity-0": amount},
    }
    return {"status": {"allocation": {"devices": {"results": [result]}}}}


def _every(name: str, amount: str) -> JSON:
    exactly = {
        "deviceClassName": "nic",
        "allocationMode": "All",
        "capacity": {"requests": {"capacity-0": amount}},
    }
    return {"name": name, "exactly": exactly}


def test_all_mode_and_capacity_in_use() -> None:
    """``allocation-mode-all-in-use-sufficient`` / ``-in-use-insufficient`` /
    ``-allocating-insufficient``: stored shares leave a device out of "all" when too little
    is left; a share taken earlier in the same claim does not (and then All fails)."""
    sufficient = pools_of(
        slice_obj("s1", [_plain("device-1", "2"), _plain("device-2", "1")]),
        claims=(_stored_share("device-1", "1"),),
    )
    found = Allocator(sufficient, CLASSES).allocate([claim("a", _every("req-0", "1"))], NODE)
    assert [r["device"] for r in results(found)] == ["device-1", "device-2"]
    insufficient = pools_of(
        slice_obj("s1", [_plain("device-1", "1"), _plain("device-2", "1")]),
        claims=(_stored_share("device-1", "1"),),
    )
    found = Allocator(insufficient, CLASSES).allocate([claim("a", _every("req-0", "1"))], NODE)
    assert [r["device"] for r in results(found)] == ["device-2"]
    allocating = pools_of(slice_obj("s1", [_plain("device-1", "1"), _plain("device-2", "1")]))
    one = {
        "name": "req-0",
        "exactly": {"deviceClassName": "nic", "capacity": {"requests": {"capacity-0": "1"}}},
    }
    both = claim("a", one, _every("req-1", "1"))
    assert not Allocator(allocating, CLASSES).allocate([both], NODE).feasible

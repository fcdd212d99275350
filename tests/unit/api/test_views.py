"""Typed views over raw slices and claims: placement, counter sets, allocation results."""

from __future__ import annotations

from apiserver.api.resource import (
    ALL_NODES,
    NODE_NAME,
    NODE_SELECTOR,
    PER_DEVICE,
    AllocatedDevice,
    DeviceID,
    claim_results,
    dedicated_devices,
    device_placement,
    placement,
    shared_devices,
    slice_view,
)
from apiserver.api.resource.views import NOWHERE

SELECTOR = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]}


def test_placement_says_which_field_is_set_and_gives_it_back() -> None:
    assert placement({"nodeName": "n1"}).node_name == "n1"
    assert placement({"nodeName": "n1"}).fields == {"nodeName": "n1"}
    assert placement({"allNodes": True}).kind == ALL_NODES
    assert placement({"allNodes": False, "nodeSelector": SELECTOR}).fields == {
        "nodeSelector": SELECTOR
    }
    assert placement({"perDeviceNodeSelection": True}).per_device
    assert placement({"perDeviceNodeSelection": True}).fields == {}
    assert placement({}) == NOWHERE
    # A device has no per-device placement of its own.
    assert device_placement({"perDeviceNodeSelection": True, "allNodes": True}).kind == ALL_NODES
    assert {NODE_NAME, NODE_SELECTOR, ALL_NODES, PER_DEVICE} == {
        placement({k: v}).kind
        for k, v in (
            ("nodeName", "n"),
            ("nodeSelector", SELECTOR),
            ("allNodes", True),
            ("perDeviceNodeSelection", True),
        )
    }


def test_slice_view_reads_pool_placement_and_counter_sets_with_mixins() -> None:
    view = slice_view(
        {
            "metadata": {"name": "s"},
            "spec": {
                "driver": "d.example.com",
                "pool": {"name": "p", "generation": 3, "resourceSliceCount": 2},
                "nodeName": "n1",
                "sharedCounters": [{"name": "gpu", "includes": ["base"]}],
                "mixins": {"counterSet": [{"name": "base", "counters": {"mem": {"value": "1Gi"}}}]},
            },
        }
    )
    assert view is not None
    assert (view.key, view.generation, view.slice_count, view.node_name, view.devices) == (
        ("d.example.com", "p"),
        3,
        2,
        "n1",
        0,
    )
    assert view.counter_sets == (("gpu", (("mem", 1024**3 * 10**9),)),)
    assert slice_view({"spec": {"driver": "d"}}) is None


def test_claim_results_keep_admin_access_and_dedicated_devices_drop_it() -> None:
    claim = {
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "a", "driver": "d", "pool": "p", "device": "x"},
                        {
                            "request": "b",
                            "driver": "d",
                            "pool": "p",
                            "device": "y",
                            "adminAccess": True,
                        },
                        {"request": "c", "driver": "d", "pool": 7, "device": "z"},
                    ]
                }
            }
        }
    }
    assert claim_results(claim) == (
        AllocatedDevice(DeviceID("d", "p", "x"), "a", False),
        AllocatedDevice(DeviceID("d", "p", "y"), "b", True),
    )
    assert dedicated_devices(claim) == (DeviceID("d", "p", "x"),)
    assert dedicated_devices({"status": {}}) == ()
    assert str(DeviceID("d", "p", "x")) == "d/p/x"


def test_shares_are_not_dedicated_and_carry_what_they_consume() -> None:
    """A result with a shareID is a share of a multi-allocatable device: it does not take
    the device whole, and its consumedCapacity is read in nano units (admin-access shares
    count for nothing, as upstream)."""
    share = "0f3f5f4e-2a3b-4c5d-8e9f-0a1b2c3d4e5f"
    results = [
        {"request": "a", "driver": "d", "pool": "p", "device": "x"},
        {
            "request": "b",
            "driver": "d",
            "pool": "p",
            "device": "nic",
            "shareID": share,
            "consumedCapacity": {"bandwidth": "2Gi", "queues": "4"},
        },
        {
            "request": "c",
            "driver": "d",
            "pool": "p",
            "device": "nic",
            "shareID": share.replace("0f", "1f"),
            "adminAccess": True,
            "consumedCapacity": {"bandwidth": "1Gi"},
        },
    ]
    claim = {"status": {"allocation": {"devices": {"results": results}}}}
    assert dedicated_devices(claim) == (DeviceID("d", "p", "x"),)
    assert shared_devices(claim) == (
        (DeviceID("d", "p", "nic"), (("bandwidth", 2 * 2**30 * 10**9), ("queues", 4 * 10**9))),
    )
    assert claim_results(claim)[1].shared

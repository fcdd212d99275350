"""Typed views over raw slices and claims: placement, counter sets, allocation results."""

from __future__ import annotations

from apiserver.api.resource.views import (
    ALL_NODES,
    NODE_NAME,
    NODE_SELECTOR,
    NOWHERE,
    PER_DEVICE,
    AllocatedDevice,
    DeviceID,
    claim_results,
    dedicated_devices,
    device_placement,
    placement,
    slice_view,
)

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

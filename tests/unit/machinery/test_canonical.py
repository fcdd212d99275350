"""Where the walk for quantities goes (``machinery.canonical``): every schema node knows
whether a quantity is at or below it, and the walk leaves subtrees without one alone."""

from __future__ import annotations

from typing import Any

from apiserver.kinds.devicereservation import DeviceReservationStrategy
from apiserver.kinds.resourceslice import ResourceSliceStrategy
from apiserver.machinery.canonical import canonicalize_quantities
from apiserver.machinery.fieldmanager import schema_of


def test_a_kind_without_quantities_is_not_walked() -> None:
    schema = schema_of(DeviceReservationStrategy.model)
    assert not schema.quantities


def test_every_node_above_a_quantity_knows_of_it() -> None:
    schema = schema_of(ResourceSliceStrategy.model)
    devices = schema.child("spec").child("devices")  # a list of devices
    assert devices.elem is not None
    capacity = devices.elem.child("capacity")  # a map of capacities
    assert capacity.elem is not None
    value = capacity.elem.child("value")
    assert value.quantity
    for node in (schema, schema.child("spec"), devices, devices.elem, capacity, value):
        assert node.quantities
    # A sibling without one is not walked.
    assert not schema.child("spec").child("nodeName").quantities


def test_quantities_are_written_canonically_and_other_fields_left_as_sent() -> None:
    schema = schema_of(ResourceSliceStrategy.model)
    odd: dict[str, Any] = {"not": "checked here"}
    obj = {
        "spec": {
            "nodeName": "1000m",  # a string, not a quantity: left alone
            "devices": [{"name": "d", "capacity": {"mem": {"value": "1000m"}}, "x": odd}],
        }
    }
    canonicalize_quantities(obj, schema)
    assert obj["spec"]["nodeName"] == "1000m"
    assert obj["spec"]["devices"][0]["capacity"]["mem"]["value"] == "1"
    assert obj["spec"]["devices"][0]["x"] is odd

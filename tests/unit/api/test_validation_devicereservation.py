"""DeviceReservation validation, table-driven; its columns and the keys it holds."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.resource import (
    DeviceReservation,
    validate_device_reservation,
    validate_device_reservation_update,
)
from apiserver.kinds.devicereservation import DeviceReservationStrategy

DEVICE = {"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}
CLAIM = {"namespace": "default", "name": "train"}


def reservation(**spec: Any) -> DeviceReservation:
    full = {
        "nodeName": "node-1",
        "devices": [DEVICE],
        "claims": [CLAIM],
        "expirationTime": "2026-01-01T00:00:00Z",
        **spec,
    }
    return DeviceReservation.model_validate({"metadata": {"name": "r"}, "spec": full})


def device(n: int) -> dict[str, str]:
    return {**DEVICE, "device": f"gpu-{n}"}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, []),
        ({"devices": [device(0), device(1)], "claims": [CLAIM, {**CLAIM, "uid": "u"}]}, []),
        ({"devices": [{**DEVICE, "pool": "rack-1/node-1"}]}, []),
        ({"nodeName": ""}, ["spec.nodeName"]),
        ({"nodeName": "Node_1"}, ["spec.nodeName"]),
        ({"devices": []}, ["spec.devices"]),
        ({"devices": [device(i) for i in range(129)]}, ["spec.devices"]),
        ({"devices": [device(0), device(0)]}, ["spec.devices[1]"]),
        ({"devices": [{**DEVICE, "driver": "GPU"}]}, ["spec.devices[0].driver"]),
        ({"devices": [{**DEVICE, "pool": "a//b"}]}, ["spec.devices[0].pool"]),
        ({"devices": [device(0), {**DEVICE, "device": "gpu/0"}]}, ["spec.devices[1].device"]),
        ({"claims": []}, ["spec.claims"]),
        ({"claims": [{**CLAIM, "namespace": "Default"}]}, ["spec.claims[0].namespace"]),
        ({"claims": [CLAIM, {**CLAIM, "name": ""}]}, ["spec.claims[1].name"]),
        ({"claims": [CLAIM] * 33}, ["spec.claims"]),
    ],
)
def test_validate(spec: dict[str, Any], expected: list[str]) -> None:
    assert [e.field for e in validate_device_reservation(reservation(**spec))] == expected


def test_the_spec_is_immutable() -> None:
    old = reservation()
    assert validate_device_reservation_update(old, old) == []
    moved = reservation(nodeName="node-2")
    assert [e.field for e in validate_device_reservation_update(moved, old)] == ["spec"]


def test_columns_and_exclusive_keys() -> None:
    strategy = DeviceReservationStrategy.for_group("resource.x-k8s.io")
    obj = reservation(devices=[device(0), device(1), device(2)]).model_dump(
        by_alias=True, exclude_none=True
    )
    cells = {c.name: c.value(obj) for c in strategy.table_columns()}
    assert cells["Node"] == "node-1"
    assert cells["Devices"] == "gpu.example.com/node-1/gpu-0,+2 more"
    assert cells["Expires"] == "<expired>"
    keys = strategy.exclusive_keys(obj)
    assert [k.key for k in keys] == [
        f"/resource.x-k8s.io/devicereservationlocks/gpu.example.com/node-1/gpu-{i}"
        for i in range(3)
    ]
    assert [k.field for k in keys] == [f"spec.devices[{i}]" for i in range(3)]
    assert {k.value["reservation"] for k in keys} == {"r"}

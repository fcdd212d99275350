"""``resource.k8s.io/v1alpha3`` ResourceSlicePatch (KEP-5027): admin-controlled device attributes."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..base import APIModel
from ..meta import CONDITIONS_SCHEMA_EXTRA, Condition, KindModel
from .device import ATOMIC, DeviceCapacity, DeviceSelector, DeviceTaint, NullableDeviceAttribute


class DevicePatchFilter(APIModel):
    """Defines which device(s) a DevicePatch applies to. All criteria must be satisfied."""

    device_class_name: str | None = Field(
        None,
        description="If set, the selectors of this DeviceClass must be satisfied by a device to be patched.",
    )
    driver: str | None = Field(
        None, description="If set, only devices from that driver are patched."
    )
    pool: str | None = Field(None, description="If set, only devices in that pool are patched.")
    device: str | None = Field(None, description="If set, only devices with that name are patched.")
    selectors: list[DeviceSelector] | None = Field(
        None,
        description="Selectors define criteria which must be satisfied by a device to be patched. "
        "All selectors must be satisfied.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class DevicePatch(APIModel):
    """Selects devices and defines the attributes, capacities and taints to patch on them."""

    filter: DevicePatchFilter | None = Field(
        None,
        description="Filter defines which device(s) the patch is applied to. No filter matches every "
        "device; a patch that sets no attribute, capacity or taint is applied to none.",
    )
    priority: int | None = Field(
        None,
        description="If several patches set the same attribute or capacity of a device, the one "
        "with the highest priority wins; on equal priority the older patch wins.",
    )
    attributes: dict[str, NullableDeviceAttribute] | None = Field(
        None,
        description="Attributes to set on matching devices, by fully qualified name. An entry "
        "with `null` set removes the attribute. At most 32 attributes and capacities combined.",
    )
    capacity: dict[str, DeviceCapacity] | None = Field(
        None,
        description="Capacities to set on matching devices, by fully qualified name. Capacities "
        "cannot be removed; set them to 0 instead.",
    )
    taints: list[DeviceTaint] | None = Field(
        None,
        description="Taints to add to matching devices, at most 4. A device keeps its own "
        "taints and gets those of every matching patch; where several set a taint with the "
        "same key and effect, the patch with the highest precedence decides its value (a "
        "patch's taint replaces the device's own). timeAdded is set by the server when empty.",
        json_schema_extra=ATOMIC,
    )


class ResourceSlicePatchSpec(APIModel):
    """The desired patch."""

    devices: DevicePatch = Field(
        description="Devices defines how to patch device attributes and taints."
    )


class ResourceSlicePatchStatus(APIModel):
    """What the server observed while applying the patch."""

    observed_generation: int | None = Field(
        None, description="The generation of the spec last applied."
    )
    matched_devices: int | None = Field(
        None, description="Number of devices the patch currently applies to."
    )
    conditions: list[Condition] | None = Field(
        None,
        description="Conditions of the patch, e.g. a selector that failed to evaluate for some devices.",
        json_schema_extra=CONDITIONS_SCHEMA_EXTRA,
    )


class ResourceSlicePatch(KindModel):
    """Patches attributes, capacities and taints of devices published in ResourceSlices."""

    spec: ResourceSlicePatchSpec = Field(
        description="Changing the spec automatically increments the metadata.generation number."
    )
    status: ResourceSlicePatchStatus | None = Field(
        None, description="Status of the patch, set by the server."
    )


def set_patch_taint_times(
    spec: dict[str, Any], now: str, old: dict[str, Any] | None = None
) -> None:
    """Set ``timeAdded`` on the taints of a patch spec (JSON form) that have none: a taint
    the stored spec ``old`` had with the same key, value and effect keeps its time, any other
    gets ``now``. Tolerates ill-typed input (validation reports it later)."""
    known: dict[tuple[Any, ...], Any] = {}
    for taint in _taints(old):
        if taint.get("timeAdded"):
            known.setdefault(_identity(taint), taint["timeAdded"])
    for taint in _taints(spec):
        if not taint.get("timeAdded"):
            taint["timeAdded"] = known.get(_identity(taint), now)


def _identity(taint: dict[str, Any]) -> tuple[Any, ...]:
    # Ill-typed parts (a list for a key, say) are still told apart, and stay hashable.
    return tuple(
        v if v is None or isinstance(v, str) else repr(v)
        for v in (taint.get("key"), taint.get("value"), taint.get("effect"))
    )


def _taints(spec: Any) -> list[dict[str, Any]]:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    taints = devices.get("taints") if isinstance(devices, dict) else None
    return [t for t in taints if isinstance(t, dict)] if isinstance(taints, list) else []

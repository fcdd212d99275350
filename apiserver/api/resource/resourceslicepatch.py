"""``resource.k8s.io/v1alpha3`` ResourceSlicePatch (KEP-5027): admin-controlled device attributes."""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel
from ..meta import CONDITIONS_SCHEMA_EXTRA, Condition, KindModel
from .device import DeviceCapacity, DeviceSelector, NullableDeviceAttribute


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
    """Selects devices and defines the attributes and capacities to patch on them."""

    filter: DevicePatchFilter | None = Field(
        None,
        description="Filter defines which device(s) the patch is applied to. No filter matches every device.",
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


class ResourceSlicePatchSpec(APIModel):
    """The desired patch."""

    devices: DevicePatch = Field(description="Devices defines how to patch device attributes.")


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
    """Patches attributes and capacities of devices published in ResourceSlices."""

    spec: ResourceSlicePatchSpec = Field(
        description="Changing the spec automatically increments the metadata.generation number."
    )
    status: ResourceSlicePatchStatus | None = Field(
        None, description="Status of the patch, set by the server."
    )

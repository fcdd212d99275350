"""ResourceSlicePatch (KEP-5027): cluster-scoped, status subresource, short name ``rsp``;
the server sets ``timeAdded`` of the taints it adds, as for a slice's device taints."""

from __future__ import annotations

from typing import Any, ClassVar

from ..api.field import FieldError
from ..api.resource import (
    ResourceSlicePatch,
    set_patch_taint_times,
    validate_resource_slice_patch,
    validate_resource_slice_patch_status,
)
from ..machinery import Column, Strategy, path
from ..toolkit.timestamps import now_rfc3339

VERSION = "v1alpha3"


class ResourceSlicePatchStrategy(Strategy[ResourceSlicePatch]):
    model = ResourceSlicePatch
    version = VERSION
    kind = "ResourceSlicePatch"
    plural = "resourceslicepatches"
    singular = "resourceslicepatch"
    short_names = ("rsp",)
    has_status = True
    columns: ClassVar[tuple[Column, ...]] = (
        Column(
            "Driver",
            "string",
            path("spec", "devices", "filter", "driver"),
            "Driver whose devices are patched.",
        ),
        Column(
            "Pool",
            "string",
            path("spec", "devices", "filter", "pool"),
            "Pool whose devices are patched.",
        ),
        Column(
            "Device",
            "string",
            path("spec", "devices", "filter", "device"),
            "Device that is patched.",
        ),
        Column(
            "Priority",
            "integer",
            path("spec", "devices", "priority"),
            "Priority among patches of a device.",
        ),
        Column(
            "Class",
            "string",
            path("spec", "devices", "filter", "deviceClassName"),
            "DeviceClass whose selectors must match.",
            priority=1,
        ),
        Column(
            "Matched",
            "integer",
            path("status", "matchedDevices"),
            "Devices the patch applies to.",
            priority=1,
        ),
    )

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        set_patch_taint_times(obj.get("spec") or {}, now_rfc3339())

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        # A taint gets the time it was added; an unchanged taint keeps its time.
        set_patch_taint_times(obj.get("spec") or {}, now_rfc3339(), old.get("spec"))

    def validate(self, obj: ResourceSlicePatch) -> list[FieldError]:
        return validate_resource_slice_patch(obj)

    def validate_update(self, new: ResourceSlicePatch, old: ResourceSlicePatch) -> list[FieldError]:
        return validate_resource_slice_patch(new, old)

    def validate_status(self, obj: ResourceSlicePatch) -> list[FieldError]:
        return validate_resource_slice_patch_status(obj.status)

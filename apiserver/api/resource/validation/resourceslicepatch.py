"""Validation of ResourceSlicePatch (KEP-5027): the filter, the priority, at most 32
attributes and capacities, at most 4 taints (each validated as a slice's device taint)."""

from __future__ import annotations

from ... import field
from ...field import FieldError, Path
from ...metavalidation import validate_conditions
from ...names import dns1123_subdomain_errors
from ..resourceslicepatch import ResourceSlicePatch, ResourceSlicePatchStatus
from .device import (
    MAX_TAINTS,
    validate_attributes_and_capacity,
    validate_device_filter,
    validate_selectors,
    validate_taint,
)

PRIORITY_MIN = -(2**31)
PRIORITY_MAX = 2**31 - 1


def _selector_expressions(patch: ResourceSlicePatch | None) -> set[str]:
    flt = patch.spec.devices.filter if patch is not None else None
    return {s.cel.expression for s in (flt.selectors or []) if s.cel} if flt else set()


def validate_resource_slice_patch(
    patch: ResourceSlicePatch, old: ResourceSlicePatch | None = None
) -> list[FieldError]:
    """Validate a new patch, or an update of ``old`` (whose CEL selectors are not recompiled)."""
    devices = patch.spec.devices
    path = Path("spec").child("devices")
    errs: list[FieldError] = []
    if devices.filter is not None:
        fpath = path.child("filter")
        flt = devices.filter
        if flt.device_class_name is not None:
            errs += field.invalid_each(
                fpath.child("deviceClassName"),
                flt.device_class_name,
                dns1123_subdomain_errors(flt.device_class_name),
            )
        errs += validate_device_filter(flt.driver, flt.pool, flt.device, fpath)
        errs += validate_selectors(
            flt.selectors or [], fpath.child("selectors"), stored=_selector_expressions(old)
        )
    if devices.priority is not None and not PRIORITY_MIN <= devices.priority <= PRIORITY_MAX:
        errs.append(
            field.invalid(str(path.child("priority")), devices.priority, "must be a 32-bit integer")
        )
    errs += validate_attributes_and_capacity(
        devices.attributes or {}, devices.capacity or {}, path, require_domain=True
    )
    taints = devices.taints or []
    tpath = path.child("taints")
    if len(taints) > MAX_TAINTS:
        errs.append(field.too_many(str(tpath), len(taints), MAX_TAINTS))
    for i, taint in enumerate(taints[:MAX_TAINTS]):
        errs += validate_taint(taint, tpath.index(i))
    return errs


def validate_resource_slice_patch_status(
    status: ResourceSlicePatchStatus | None,
) -> list[FieldError]:
    if status is None:
        return []
    path = Path("status")
    errs: list[FieldError] = []
    for name, value in (
        ("observedGeneration", status.observed_generation),
        ("matchedDevices", status.matched_devices),
    ):
        errs += field.at_least(path.child(name), value, 0)
    errs += validate_conditions(status.conditions or [], path.child("conditions"))
    return errs

"""Validation of DeviceTaintRule as upstream: the selector's driver, pool and device names,
the taint as a slice's device taint, at most 8 status conditions."""

from __future__ import annotations

from ... import field
from ...field import FieldError, Path
from ...metavalidation import validate_conditions
from ..devicetaintrule import MAX_CONDITIONS, DeviceTaintRule, DeviceTaintRuleStatus
from .device import validate_device_name, validate_driver_name, validate_pool_name, validate_taint


def validate_device_taint_rule(rule: DeviceTaintRule) -> list[FieldError]:
    path = Path("spec")
    errs: list[FieldError] = []
    selector = rule.spec.device_selector
    if selector is not None:
        spath = path.child("deviceSelector")
        if selector.driver is not None:
            errs += validate_driver_name(selector.driver, spath.child("driver"))
        if selector.pool is not None:
            errs += validate_pool_name(selector.pool, spath.child("pool"))
        if selector.device is not None:
            errs += validate_device_name(selector.device, spath.child("device"))
    errs += validate_taint(rule.spec.taint, path.child("taint"))
    return errs


def validate_device_taint_rule_status(status: DeviceTaintRuleStatus | None) -> list[FieldError]:
    conditions = (status.conditions if status is not None else None) or []
    path = Path("status").child("conditions")
    errs: list[FieldError] = []
    if len(conditions) > MAX_CONDITIONS:
        errs.append(field.too_many(str(path), len(conditions), MAX_CONDITIONS))
    errs += validate_conditions(conditions, path)
    return errs

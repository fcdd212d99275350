"""Validation of DeviceTaintRule as upstream: the selector's driver, pool and device names,
the taint as a slice's device taint, at most 8 status conditions."""

from __future__ import annotations

from ... import field
from ...field import FieldError, Path
from ...metavalidation import validate_conditions
from ..devicetaintrule import MAX_CONDITIONS, DeviceTaintRule, DeviceTaintRuleStatus
from .device import validate_device_filter, validate_taint


def validate_device_taint_rule(rule: DeviceTaintRule) -> list[FieldError]:
    path = Path("spec")
    errs: list[FieldError] = []
    selector = rule.spec.device_selector
    if selector is not None:
        errs += validate_device_filter(
            selector.driver, selector.pool, selector.device, path.child("deviceSelector")
        )
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

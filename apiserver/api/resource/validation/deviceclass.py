"""Validation of DeviceClass, and of the opaque driver configuration classes and claims share."""

from __future__ import annotations

import json
from typing import Any

from ... import field
from ...field import FieldError, Path
from ...names import qualified_name_errors
from ..device import DeviceSelector
from ..deviceclass import (
    DEVICE_CLASS_CONFIG_MAX,
    OPAQUE_PARAMETERS_MAX_LENGTH,
    DeviceClass,
    OpaqueDeviceConfiguration,
)
from .device import validate_driver_name, validate_selectors

_REQUESTS_PREFIX = "requests."


def validate_device_class(cls: DeviceClass, old: DeviceClass | None = None) -> list[FieldError]:
    """Validate a new class, or an update of ``old``.

    Selectors of ``old`` are not compiled again if the list is unchanged, as upstream: any
    change, reordering included, makes every expression count as new.
    """
    spec = cls.spec
    path = Path("spec")
    selectors = spec.selectors or []
    old_selectors = (old.spec.selectors or []) if old is not None else None
    errs = validate_selectors(
        selectors,
        path.child("selectors"),
        stored=_expressions(selectors) if selectors == old_selectors else (),
    )
    configs = spec.config or []
    if len(configs) > DEVICE_CLASS_CONFIG_MAX:
        errs.append(
            field.too_many(str(path.child("config")), len(configs), DEVICE_CLASS_CONFIG_MAX)
        )
    for i, config in enumerate(configs):
        errs += validate_opaque_configuration(
            config.opaque, path.child("config").index(i).child("opaque")
        )
    if spec.extended_resource_name is not None:
        errs += validate_extended_resource_name(
            spec.extended_resource_name, path.child("extendedResourceName")
        )
    return errs


def _expressions(selectors: list[DeviceSelector]) -> set[str]:
    return {s.cel.expression for s in selectors if s.cel is not None}


def validate_opaque_configuration(
    config: OpaqueDeviceConfiguration | None, path: Path
) -> list[FieldError]:
    """Required (opaque is the only kind of configuration): a driver name, and parameters
    that are a JSON object of at most 10 Ki serialized."""
    if config is None:
        return [field.required(str(path))]
    errs = validate_driver_name(config.driver, path.child("driver"))
    errs += validate_raw_object(
        config.parameters, path.child("parameters"), OPAQUE_PARAMETERS_MAX_LENGTH
    )
    return errs


def validate_raw_object(value: Any, path: Path, max_length: int) -> list[FieldError]:
    """Free-form JSON that must be an object whose compact serialization fits ``max_length``."""
    if value is None:
        return [field.required(str(path))]
    if not isinstance(value, dict):
        return [field.invalid(str(path), "<value omitted>", "must be a valid JSON object")]
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    if size > max_length:
        return [field.too_long(str(path), max_length)]
    return []


def validate_extended_resource_name(name: str, path: Path) -> list[FieldError]:
    """``<domain>/<name>`` outside the kubernetes.io domains, valid as a quota resource name."""
    errs: list[FieldError] = []
    if "/" not in name:
        errs.append(
            field.invalid(str(path), name, "must be a domain-prefixed name, e.g. example.com/gpu")
        )
    elif "kubernetes.io/" in name:
        errs.append(field.invalid(str(path), name, "must not be in the kubernetes.io domain"))
    elif name.startswith(_REQUESTS_PREFIX):
        errs.append(field.invalid(str(path), name, "must not start with 'requests.'"))
    else:
        errs += field.invalid_each(path, name, qualified_name_errors(_REQUESTS_PREFIX + name))
    return errs

"""The CEL ``device`` value of a flattened ResourceSlice device.

Input: the device as JSON (``name``, ``attributes`` {qualified name: {int|bool|string|version:
value}}, ``capacity`` {qualified name: {value: quantity}}, optionally
``allowMultipleAllocations``) and the slice's driver. Output: the map CEL expressions see as
``device`` (and as each element of ``devices``): ``driver``, ``attributes`` and ``capacity``
grouped by domain, where a name without a domain belongs to the driver's domain; versions and
quantities become the values of ``semver`` and ``quantity``.

Converting is the expensive part of handing a device to CEL; callers that evaluate many
expressions on a device convert it once and keep the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from . import quantity, semver
from .errors import EvaluationError

DeviceValue = dict[str, Any]
"""A device as CEL sees it; build it with ``device_value``."""

_SCALARS = ("int", "bool", "string", "version")
_LISTS = ("ints", "bools", "strings", "versions")
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.rpartition("/")
    return (domain, ident) if sep else (driver, name)


def _scalar(kind: str, value: Any, name: str) -> Any:
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise EvaluationError(f"attribute {name}: int value must be an integer")
        if not _INT64[0] <= value <= _INT64[1]:
            raise EvaluationError(f"attribute {name}: int value out of range")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise EvaluationError(f"attribute {name}: bool value must be a boolean")
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise EvaluationError(f"attribute {name}: string value must be a string")
        return value
    if not isinstance(value, str):
        raise EvaluationError(f"attribute {name}: version value must be a string")
    try:
        return semver.parse(value).cel()
    except semver.SemverError as e:
        raise EvaluationError(f"attribute {name}: {e}") from None


def attribute_value(attribute: Mapping[str, Any], name: str = "") -> Any:
    """The CEL value of one DeviceAttribute (exactly one of its value fields must be set)."""
    present = [k for k in (*_SCALARS, *_LISTS) if attribute.get(k) is not None]
    if len(present) != 1:
        raise EvaluationError(f"attribute {name}: unsupported attribute value")
    kind = present[0]
    value = attribute[kind]
    if kind in _SCALARS:
        return _scalar(kind, value, name)
    if not isinstance(value, list):
        raise EvaluationError(f"attribute {name}: {kind} must be a list")
    return [_scalar(kind[:-1], v, name) for v in value]


def quantity_value(value: Any, name: str = "") -> dict[str, str]:
    """The CEL value of a quantity as it appears in JSON: a string or a number."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise EvaluationError(f"capacity {name}: a quantity must be a string or a number")
    text = value if isinstance(value, str) else repr(value)
    try:
        return quantity.parse(text).cel()
    except quantity.QuantityError as e:
        raise EvaluationError(f"capacity {name}: {e}") from None


def device_value(driver: str, device: Mapping[str, Any]) -> DeviceValue:
    """The CEL ``device`` for one device of a slice of ``driver``."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, attr in (device.get("attributes") or {}).items():
        domain, ident = _split(name, driver)
        if not isinstance(attr, Mapping):
            raise EvaluationError(f"attribute {name}: unsupported attribute value")
        attributes.setdefault(domain, {})[ident] = attribute_value(attr, name)
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in (device.get("capacity") or {}).items():
        domain, ident = _split(name, driver)
        raw = cap.get("value") if isinstance(cap, Mapping) else None
        capacity.setdefault(domain, {})[ident] = quantity_value(raw, name)
    return {
        "driver": driver,
        "attributes": attributes,
        "capacity": capacity,
        "allowMultipleAllocations": bool(device.get("allowMultipleAllocations") or False),
    }


def devices_value(devices: Iterable[DeviceValue]) -> list[DeviceValue]:
    """The CEL ``devices`` of a constraint: the converted devices of the candidate set."""
    return list(devices)

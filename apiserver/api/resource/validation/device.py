"""Validation rules for device names, attributes, capacities and selectors (upstream limits)."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from .... import cel
from ....cel import quantity
from ... import field
from ...field import FieldError, Path
from ...names import (
    DNS1123_SUBDOMAIN_MAX,
    c_identifier_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from ..device import (
    CapacityRequestPolicy,
    DeviceAttribute,
    DeviceCapacity,
    DeviceSelector,
    DeviceTaint,
)
from ..resourceclaim import NEEDS_ATTACHING

DRIVER_NAME_MAX = 63
POOL_NAME_MAX = DNS1123_SUBDOMAIN_MAX  # as upstream: the same bound as a node name's
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
ATTRIBUTE_VALUE_MAX = 64
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
"""An int attribute is an int64 upstream (JSON numbers beyond it do not decode there)."""
MAX_ATTRIBUTE_VALUES_PER_DEVICE = 48
"""Attribute values of one device, each element of a list attribute counting as one (1.36)."""
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_SELECTORS = 32
MAX_VALID_VALUES = 10
CEL_EXPRESSION_MAX_LENGTH = 10 * 1024
MAX_TAINTS = 4
"""Taints of one device in a slice, and taints of one ResourceSlicePatch (KEP-5055's 4)."""
TAINT_EFFECTS = ("None", "NoSchedule", "NoExecute")

# semver.org 2.0.0, the regular expression the specification recommends.
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


def validate_driver_name(name: str, path: Path) -> list[FieldError]:
    """A driver name is a lower-case DNS subdomain of at most 63 characters."""
    return field.required_name(path, name, dns1123_subdomain_errors, max_length=DRIVER_NAME_MAX)


def validate_pool_name(name: str, path: Path) -> list[FieldError]:
    """One or more DNS subdomains separated by slashes, at most 253 characters."""
    return field.required_name(path, name, _pool_name_errors, max_length=POOL_NAME_MAX)


def _pool_name_errors(name: str) -> list[str]:
    return [e for part in name.split("/") for e in dns1123_subdomain_errors(part)]


def validate_device_name(name: str, path: Path) -> list[FieldError]:
    return field.required_name(path, name, dns1123_label_errors)


def validate_condition_names(names: Sequence[str], path: Path) -> list[FieldError]:
    """A device's binding (or binding failure) conditions, or their copy in an allocation
    result: each a label name, none twice."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, name in enumerate(names):
        at = str(path.index(i))
        errs += field.invalid_each(at, name, qualified_name_errors(name))
        if name in seen:
            errs.append(field.duplicate(at, name))
        seen.add(name)
    return errs


def validate_unique_name(name: str, path: Path, seen: set[str]) -> list[FieldError]:
    """A device's, a request's or a subrequest's name: a DNS label (required), not one of
    ``seen`` (the names before it in its list), which it then joins."""
    errs = validate_device_name(name, path)
    if name in seen:
        errs.append(field.duplicate(str(path), name))
    seen.add(name)
    return errs


def validate_binding_condition_pair(
    conditions: Sequence[str],
    failure_conditions: Sequence[str],
    path: Path,
    *,
    overlap: str,
    failure_needed: str,
    conditions_needed: str,
) -> list[FieldError]:
    """Binding and binding failure conditions side by side: none in both lists, and both lists
    set or neither. The wording is the caller's (upstream words a slice's and a claim's rules
    differently)."""
    errs: list[FieldError] = []
    failure_path = path.child("bindingFailureConditions")
    known = set(conditions)
    for i, value in enumerate(failure_conditions):
        if value in known:
            errs.append(field.invalid(str(failure_path.index(i)), value, overlap))
    if conditions and not failure_conditions:
        errs.append(field.required(str(failure_path), failure_needed))
    if failure_conditions and not conditions:
        errs.append(field.required(str(path.child("bindingConditions")), conditions_needed))
    return errs


def validate_device_filter(
    driver: str | None, pool: str | None, device: str | None, path: Path
) -> list[FieldError]:
    """The optional driver, pool and device names a filter matches devices by (a
    DeviceTaintRule's selector, a ResourceSlicePatch's filter): each checked when set."""
    errs: list[FieldError] = []
    if driver is not None:
        errs += validate_driver_name(driver, path.child("driver"))
    if pool is not None:
        errs += validate_pool_name(pool, path.child("pool"))
    if device is not None:
        errs += validate_device_name(device, path.child("device"))
    return errs


WELL_KNOWN_NAMES = frozenset({NEEDS_ATTACHING})
"""Names the proposals define although they are not ``<domain>/<C identifier>``.

KEP-5007 marks fabric devices with ``kubernetes.io/needs-attaching``; the hyphen makes it
no C identifier, so CEL reads it as ``device.attributes["kubernetes.io"]["needs-attaching"]``.
"""


def validate_qualified_name(name: str, path: Path, *, require_domain: bool) -> list[FieldError]:
    """``<domain>/<C identifier>``, or a bare C identifier unless ``require_domain``."""
    if not name:
        return [field.required(str(path))]
    if name in WELL_KNOWN_NAMES:
        return []
    parts = name.split("/")
    if len(parts) > 2:
        return [
            field.invalid(str(path), name, "a qualified name must not have more than one slash")
        ]
    if len(parts) == 1:
        if require_domain:
            return [field.required(str(path), "the domain must be set")]
        ident = parts[0]
        return field.invalid_each(path, name, c_identifier_errors(ident, DEVICE_MAX_ID_LENGTH))
    domain, ident = parts
    errs: list[FieldError] = []
    if not domain:
        errs.append(field.required(str(path), "the domain must not be empty"))
    elif len(domain) > DEVICE_MAX_DOMAIN_LENGTH:
        errs.append(field.too_long(str(path), DEVICE_MAX_DOMAIN_LENGTH))
    else:
        errs += field.invalid_each(path, name, dns1123_subdomain_errors(domain))
    errs += field.invalid_each(path, name, c_identifier_errors(ident, DEVICE_MAX_ID_LENGTH))
    return errs


def validate_attribute_value(attr: DeviceAttribute, path: Path) -> list[FieldError]:
    """Exactly one value; ints within int64, strings and versions at most 64 bytes, versions
    valid semver; a list (``ints``, ``bools``, ``strings``, ``versions``) non-empty, each
    element checked as its scalar would be. Only the one field set is looked at, and a
    field path is built only for an error (this runs for every attribute of every slice)."""
    values = _set_values(attr)
    if len(values) != 1:
        return [field.invalid(str(path), _present(attr), "exactly one value must be specified")]
    kind = values[0]
    scalar = _ELEMENT.get(kind)
    if scalar is None:
        check = _CHECKS.get(kind)
        value = getattr(attr, kind)
        if check is None or check[0](value):
            return []  # a bool, a null of a patch, or a good scalar
        return check[1](value, path.child(kind.rstrip("_")))
    items = getattr(attr, kind)
    if not items:
        return [field.required(str(path.child(kind)), "a list value must not be empty")]
    check = _CHECKS.get(scalar)
    if check is None:
        return []
    good, errors = check
    out: list[FieldError] = []
    for i, item in enumerate(items):
        if not good(item):
            out += errors(item, path.child(kind).index(i))
    return out


LIST_VALUES = ("ints", "bools", "strings", "versions")
"""The list forms of a DeviceAttribute (upstream's ``DRAListTypeAttributes``)."""
_ELEMENT = {"ints": "int_", "bools": "bool_", "strings": "string", "versions": "version"}
_VALUE_FIELDS = ("int_", "bool_", "string", "version", *LIST_VALUES, "null")
"""Every value field, in the order errors name them (``null``: patches only)."""


def _int_ok(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX


def _int_errors(value: int, path: Path) -> list[FieldError]:
    return [field.invalid(str(path), value, "must be a 64-bit signed integer")]


def _string_ok(value: str) -> bool:
    return len(value) <= ATTRIBUTE_VALUE_MAX // 4 or len(value.encode()) <= ATTRIBUTE_VALUE_MAX


def _string_errors(value: str, path: Path) -> list[FieldError]:
    return [field.too_long(str(path), ATTRIBUTE_VALUE_MAX)]


def _version_ok(value: str) -> bool:
    return _string_ok(value) and _SEMVER.match(value) is not None


def _version_errors(value: str, path: Path) -> list[FieldError]:
    if not _string_ok(value):
        return _string_errors(value, path)
    return [
        field.invalid(str(path), value, "must be a string compatible with semver.org spec 2.0.0")
    ]


_CHECKS: dict[str, tuple[Callable[[Any], bool], Callable[[Any, Path], list[FieldError]]]] = {
    "int_": (_int_ok, _int_errors),
    "string": (_string_ok, _string_errors),
    "version": (_version_ok, _version_errors),
}
"""Per scalar field: is a value good, and the errors of one that is not."""


def _set_values(attr: DeviceAttribute) -> list[str]:
    """The value fields set (not null), in ``_VALUE_FIELDS`` order; usually one."""
    given = attr.model_fields_set
    if len(given) == 1:  # the common case
        for name in given:
            return [name] if getattr(attr, name) is not None else []
    return [n for n in _VALUE_FIELDS if n in given and getattr(attr, n) is not None]


def _present(attr: DeviceAttribute) -> list[str]:
    return [n.rstrip("_") for n in _set_values(attr)]


def validate_attributes_and_capacity(
    attributes: Mapping[str, DeviceAttribute],
    capacity: Mapping[str, DeviceCapacity],
    path: Path,
    *,
    require_domain: bool,
    max_total: int | None = MAX_ATTRIBUTES_AND_CAPACITIES,
) -> list[FieldError]:
    """Names and values of attributes and capacities, and (unless ``max_total`` is None) at
    most ``max_total`` of them together, reported at ``path``."""
    errs: list[FieldError] = []
    attr_path = path.child("attributes")
    for name, attr in attributes.items():
        errs += validate_qualified_name(name, attr_path.key(name), require_domain=require_domain)
        errs += validate_attribute_value(attr, attr_path.key(name))
    cap_path = path.child("capacity")
    for name, cap in capacity.items():
        errs += validate_qualified_name(name, cap_path.key(name), require_domain=require_domain)
        errs += validate_capacity(cap, cap_path.key(name))
    total = len(attributes) + len(capacity)
    if max_total is not None and total > max_total:
        errs.append(too_many_attributes_and_capacities(str(path), total, max_total))
    return errs


def too_many_attributes_and_capacities(path: str, total: int, limit: int) -> FieldError:
    return field.invalid(
        path,
        total,
        f"the total number of attributes and capacities must not exceed {limit}",
    )


def validate_capacity(capacity: DeviceCapacity, path: Path) -> list[FieldError]:
    """The value is a quantity (checked when parsed); a request policy must fit the value."""
    if capacity.request_policy is None:
        return []
    return validate_request_policy(
        capacity.request_policy, _quantity(capacity.value), path.child("requestPolicy")
    )


def _quantity(value: str | int | float) -> quantity.Quantity:
    if isinstance(value, int):
        return quantity.from_int(value)
    return quantity.parse(value if isinstance(value, str) else repr(value))


def validate_request_policy(
    policy: CapacityRequestPolicy, capacity: quantity.Quantity, path: Path
) -> list[FieldError]:
    """Upstream's rules for a consumable capacity: a default within the valid amounts, valid
    values ascending and within the capacity, a range within the capacity."""
    errs: list[FieldError] = []
    # A default alone is not checked against the value, as upstream: it only makes an
    # unrequested share of the device never fit.
    default = _quantity(policy.default) if policy.default is not None else None
    if policy.valid_values is not None and policy.valid_range is not None:
        errs.append(field.forbidden(str(path), "only one of validValues and validRange may be set"))
        return errs
    if (policy.valid_values is not None or policy.valid_range is not None) and default is None:
        errs.append(
            field.required(
                str(path.child("default")), "required when validValues or validRange is set"
            )
        )
    if policy.valid_values is not None:
        errs += _validate_valid_values(policy.valid_values, default, capacity, path)
    if policy.valid_range is not None:
        errs += _validate_valid_range(policy, default, capacity, path)
    return errs


def _validate_valid_values(
    values: list[str | int | float],
    default: quantity.Quantity | None,
    capacity: quantity.Quantity,
    path: Path,
) -> list[FieldError]:
    vpath = path.child("validValues")
    if not values:
        return [field.required(str(vpath))]
    errs: list[FieldError] = []
    if len(values) > MAX_VALID_VALUES:
        return [field.too_many(str(vpath), len(values), MAX_VALID_VALUES)]
    parsed = [_quantity(v) for v in values]
    for i, (raw, value) in enumerate(zip(values, parsed, strict=True)):
        if value.nanos > capacity.nanos:
            errs.append(
                field.invalid(
                    str(vpath.index(i)), raw, "must be less than or equal to capacity value"
                )
            )
        if i and value.nanos <= parsed[i - 1].nanos:
            errs.append(
                field.invalid(
                    str(vpath.index(i)), raw, "must be sorted in ascending order without duplicates"
                )
            )
    if default is not None and default not in parsed:
        errs.append(
            field.invalid(
                str(path.child("default")), default.canonical, "must be one of validValues"
            )
        )
    return errs


def _validate_valid_range(
    policy: CapacityRequestPolicy,
    default: quantity.Quantity | None,
    capacity: quantity.Quantity,
    path: Path,
) -> list[FieldError]:
    rng = policy.valid_range
    assert rng is not None
    rpath = path.child("validRange")
    errs: list[FieldError] = []
    low = _quantity(rng.min)
    high = _quantity(rng.max) if rng.max is not None else None
    step = _quantity(rng.step) if rng.step is not None else None
    if low.nanos < 0:
        errs.append(
            field.invalid(str(rpath.child("min")), rng.min, "must be greater than or equal to 0")
        )
    if low.nanos > capacity.nanos:
        errs.append(
            field.invalid(
                str(rpath.child("min")), rng.min, "must be less than or equal to capacity value"
            )
        )
    if high is not None:
        if high.nanos > capacity.nanos:
            errs.append(
                field.invalid(
                    str(rpath.child("max")), rng.max, "must be less than or equal to capacity value"
                )
            )
        if high.nanos < low.nanos:
            errs.append(
                field.invalid(
                    str(rpath.child("max")), rng.max, "must be greater than or equal to min"
                )
            )
    if step is not None:
        if step.nanos <= 0:
            errs.append(field.invalid(str(rpath.child("step")), rng.step, "must be greater than 0"))
            step = None
        elif low.nanos + step.nanos > capacity.nanos:
            errs.append(
                field.invalid(
                    str(rpath.child("step")),
                    rng.step,
                    "min + step must be less than or equal to capacity value",
                )
            )
    if high is not None and step is not None and (high.nanos - low.nanos) % step.nanos:
        errs.append(
            field.invalid(str(rpath.child("max")), rng.max, "must be min plus a multiple of step")
        )
    if default is not None:
        dpath = str(path.child("default"))
        if default.nanos < low.nanos or (high is not None and default.nanos > high.nanos):
            errs.append(field.invalid(dpath, policy.default, "must be within validRange"))
        elif step is not None and (default.nanos - low.nanos) % step.nanos:
            errs.append(field.invalid(dpath, policy.default, "must be min plus a multiple of step"))
    return errs


def validate_selectors(
    selectors: list[DeviceSelector], path: Path, *, stored: Collection[str] = ()
) -> list[FieldError]:
    """Each selector must carry a CEL expression within the length limit that compiles in the
    DRA environment and whose estimated cost is within the limit.

    Expressions in ``stored`` (those of the object being updated) are not compiled again, as
    upstream: an expression accepted once stays valid when the environment or limits change.
    """
    errs: list[FieldError] = []
    if len(selectors) > MAX_SELECTORS:
        errs.append(field.too_many(str(path), len(selectors), MAX_SELECTORS))
    for i, selector in enumerate(selectors):
        p = path.index(i)
        if selector.cel is None:
            errs.append(field.required(str(p.child("cel"))))
            continue
        errs += validate_cel_expression(
            selector.cel.expression,
            p.child("cel").child("expression"),
            stored,
            cel.compile_selector,
        )
    return errs


def validate_cel_expression(
    expression: str, path: Path, stored: Collection[str], compile_: Callable[[str], object]
) -> list[FieldError]:
    """A CEL expression (a selector, a constraint): required, bounded in length, and unless
    ``stored`` already holds it, compiled by ``compile_`` with its estimated cost checked,
    with upstream's error texts."""
    if not expression.strip():
        return [field.required(str(path))]
    if len(expression) > CEL_EXPRESSION_MAX_LENGTH:
        return [field.too_long(str(path), CEL_EXPRESSION_MAX_LENGTH)]
    if expression in stored:
        return []
    try:
        compile_(expression)
    except cel.CostLimitError:
        return [field.forbidden(str(path), "too complex, exceeds cost limit")]
    except cel.CompileError as e:
        return [field.invalid(str(path), expression, f"compilation failed: {e.message}")]
    return []


def validate_taint(taint: DeviceTaint, path: Path) -> list[FieldError]:
    """A device taint: a label-name key (required), a label-value value, a known effect."""
    errs = field.required_name(path.child("key"), taint.key, qualified_name_errors)
    if taint.value is not None:
        errs += field.invalid_each(
            path.child("value"), taint.value, label_value_errors(taint.value)
        )
    if taint.effect not in TAINT_EFFECTS:
        errs.append(
            field.not_supported(str(path.child("effect")), taint.effect, list(TAINT_EFFECTS))
        )
    return errs

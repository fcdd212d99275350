"""Validation of ResourceClaim: the device requests of the spec, and the allocation status.

The spec rules are shared with ResourceClaimTemplate (``validate_claim_spec`` with a base
path). Status rules need the stored object: an allocation is immutable once set, and the
status of a device must name a device of the allocation.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection, Iterable
from typing import Any

from .... import cel
from ... import field
from ...core.validation.nodeselector import validate_node_name, validate_node_selector
from ...field import FieldError, Path
from ...metavalidation import validate_conditions
from ...names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from ..device import DeviceSelector
from ..resourceclaim import (
    ALLOCATION_CONFIG_MAX,
    ALLOCATION_RESULTS_MAX,
    BINDING_CONDITIONS_MAX,
    CONFIG_MAX,
    CONSTRAINTS_MAX,
    DEVICE_CONDITIONS_MAX,
    DEVICE_DATA_MAX_LENGTH,
    NETWORK_HARDWARE_ADDRESS_MAX,
    NETWORK_INTERFACE_NAME_MAX,
    NETWORK_IPS_MAX,
    REQUESTS_MAX,
    RESERVED_FOR_MAX,
    SUBREQUESTS_MAX,
    TOLERATIONS_MAX,
    AllocatedDeviceStatus,
    AllocationResult,
    CapacityRequirements,
    DeviceConstraint,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSubRequest,
    DeviceToleration,
    ExactDeviceRequest,
    NetworkDeviceData,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimStatus,
)
from .device import (
    validate_binding_condition_pair,
    validate_cel_expression,
    validate_condition_names,
    validate_device_name,
    validate_driver_name,
    validate_pool_name,
    validate_qualified_name,
    validate_selectors,
    validate_unique_name,
)
from .deviceclass import validate_opaque_configuration, validate_raw_object

REQUEST_REF_DETAIL = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

DeviceKey = tuple[str, str, str, str]
"""An allocated device as status entries name it: driver, pool, device, shareID ("" if none)."""


# -- the claim ----------------------------------------------------------------------------------


def validate_resource_claim(claim: ResourceClaim) -> list[FieldError]:
    return validate_claim_spec(claim.spec, Path("spec"))


def validate_resource_claim_update(new: ResourceClaim, old: ResourceClaim) -> list[FieldError]:
    """The whole spec is immutable; an unchanged spec is not compiled again."""
    errs = validate_immutable(new.spec, old.spec, Path("spec"))
    errs += validate_claim_spec(new.spec, Path("spec"), stored=claim_spec_expressions(old.spec))
    return errs


def validate_immutable(new: Any, old: Any, path: Path) -> list[FieldError]:
    """``field is immutable`` unless the two are semantically equal (nil and empty alike)."""
    if semantic(new) == semantic(old):
        return []
    return [field.invalid(str(path), semantic(new), "field is immutable")]


def semantic(value: Any) -> Any:
    """The JSON form of a model without unset, empty-list and empty-map fields."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(by_alias=True, exclude_none=True)
    if isinstance(value, dict):
        pruned = {k: semantic(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [semantic(v) for v in value]
    return value


def claim_spec_expressions(spec: ResourceClaimSpec) -> set[str]:
    """Every CEL expression of a spec: selectors and KEP-5254 constraints."""
    devices = spec.devices
    if devices is None:
        return set()
    found: set[str] = set()
    for request in devices.requests or []:
        alternatives: list[Any] = [request.exactly, *(request.first_available or [])]
        for alt in alternatives:
            if alt is not None:
                found |= _selector_expressions(alt.selectors or [])
    found |= {c.cel.expression for c in devices.constraints or [] if c.cel is not None}
    return found


def _selector_expressions(selectors: Iterable[DeviceSelector]) -> set[str]:
    return {s.cel.expression for s in selectors if s.cel is not None}


# -- the spec -----------------------------------------------------------------------------------


def validate_claim_spec(
    spec: ResourceClaimSpec, path: Path, *, stored: Collection[str] = ()
) -> list[FieldError]:
    """Requests, constraints and config of a claim (or of a template's claim) at ``path``.

    Expressions in ``stored`` are not compiled again (see ``validate_selectors``).
    """
    devices = spec.devices
    if devices is None:
        return []
    path = path.child("devices")
    errs: list[FieldError] = []
    requests = devices.requests or []
    if len(requests) > REQUESTS_MAX:
        errs.append(field.too_many(str(path.child("requests")), len(requests), REQUESTS_MAX))
    seen: set[str] = set()
    names = request_names(spec)
    for i, request in enumerate(requests):
        p = path.child("requests").index(i)
        errs += validate_unique_name(request.name, p.child("name"), seen)
        subrequests = request.first_available or []
        kinds = (request.exactly is not None) + bool(subrequests)
        if kinds == 0:
            errs.append(
                field.required(str(p), "exactly one of `exactly` or `firstAvailable` is required")
            )
        elif kinds > 1:
            errs.append(
                field.invalid(
                    str(p),
                    ["exactly", "firstAvailable"],
                    "exactly one of `exactly` or `firstAvailable` must be set",
                )
            )
        if request.exactly is not None:
            errs += _validate_exact_request(request.exactly, p.child("exactly"), stored)
        errs += _validate_subrequests(request, p.child("firstAvailable"), stored)
    constraints = devices.constraints or []
    if len(constraints) > CONSTRAINTS_MAX:
        errs.append(
            field.too_many(str(path.child("constraints")), len(constraints), CONSTRAINTS_MAX)
        )
    for i, constraint in enumerate(constraints):
        errs += _validate_constraint(constraint, path.child("constraints").index(i), names, stored)
    configs = devices.config or []
    if len(configs) > CONFIG_MAX:
        errs.append(field.too_many(str(path.child("config")), len(configs), CONFIG_MAX))
    for i, config in enumerate(configs):
        p = path.child("config").index(i)
        errs += validate_request_refs(config.requests or [], p.child("requests"), names)
        errs += validate_opaque_configuration(config.opaque, p.child("opaque"))
    return errs


def _validate_subrequests(
    request: DeviceRequest, path: Path, stored: Collection[str]
) -> list[FieldError]:
    subrequests = request.first_available or []
    errs: list[FieldError] = []
    if len(subrequests) > SUBREQUESTS_MAX:
        errs.append(field.too_many(str(path), len(subrequests), SUBREQUESTS_MAX))
    seen: set[str] = set()
    for j, sub in enumerate(subrequests):
        p = path.index(j)
        errs += validate_unique_name(sub.name, p.child("name"), seen)
        errs += _validate_exact_request(sub, p, stored)
    return errs


def _validate_exact_request(
    request: ExactDeviceRequest | DeviceSubRequest, path: Path, stored: Collection[str]
) -> list[FieldError]:
    """Rules shared by exact requests and subrequests (which have the same fields but adminAccess)."""
    errs = field.required_name(
        path.child("deviceClassName"), request.device_class_name, dns1123_subdomain_errors
    )
    errs += validate_selectors(request.selectors or [], path.child("selectors"), stored=stored)
    mode = request.allocation_mode or "ExactCount"
    count = request.count
    if mode == "ExactCount":
        if count is not None and count <= 0:
            errs.append(field.invalid(str(path.child("count")), count, "must be greater than zero"))
    elif count:
        errs.append(
            field.invalid(
                str(path.child("count")),
                count,
                f"must not be specified when allocationMode is '{mode}'",
            )
        )
    errs += validate_tolerations(request.tolerations or [], path.child("tolerations"))
    if request.capacity is not None:
        errs += _validate_capacity_requirements(request.capacity, path.child("capacity"))
    return errs


def _validate_capacity_requirements(capacity: CapacityRequirements, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    requests_path = path.child("requests")
    for name in capacity.requests or {}:
        errs += validate_qualified_name(name, requests_path.key(name), require_domain=False)
    return errs


def validate_tolerations(tolerations: list[DeviceToleration], path: Path) -> list[FieldError]:
    """At most 16; Exists has no value, an empty key needs Exists, seconds only for NoExecute."""
    errs: list[FieldError] = []
    if len(tolerations) > TOLERATIONS_MAX:
        errs.append(field.too_many(str(path), len(tolerations), TOLERATIONS_MAX))
    for i, toleration in enumerate(tolerations):
        p = path.index(i)
        operator = toleration.operator or "Equal"
        if toleration.key:
            errs += field.invalid_each(
                p.child("key"), toleration.key, qualified_name_errors(toleration.key)
            )
        elif operator != "Exists":
            errs.append(
                field.invalid(
                    str(p.child("operator")), operator, "must be 'Exists' when `key` is empty"
                )
            )
        if operator == "Exists":
            if toleration.value:
                errs.append(
                    field.invalid(
                        str(p.child("value")),
                        toleration.value,
                        "must be empty when `operator` is 'Exists'",
                    )
                )
        elif toleration.value:
            errs += field.invalid_each(
                p.child("value"), toleration.value, label_value_errors(toleration.value)
            )
        if toleration.toleration_seconds is not None and toleration.effect != "NoExecute":
            errs.append(
                field.invalid(
                    str(p.child("effect")),
                    toleration.effect or "",
                    "must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
    return errs


def _validate_constraint(
    constraint: DeviceConstraint, path: Path, names: set[str], stored: Collection[str]
) -> list[FieldError]:
    errs = validate_request_refs(constraint.requests or [], path.child("requests"), names)
    kinds = [
        name
        for name, value in (
            ("matchAttribute", constraint.match_attribute),
            ("distinctAttribute", constraint.distinct_attribute),
            ("cel", constraint.cel),
        )
        if value is not None
    ]
    if not kinds:
        errs.append(
            field.required(
                str(path),
                "exactly one of `matchAttribute`, `distinctAttribute` or `cel` is required",
            )
        )
    elif len(kinds) > 1:
        errs.append(
            field.invalid(
                str(path),
                kinds,
                "exactly one of `matchAttribute`, `distinctAttribute` or `cel` must be set",
            )
        )
    if constraint.match_attribute is not None:
        errs += validate_qualified_name(
            constraint.match_attribute, path.child("matchAttribute"), require_domain=True
        )
    if constraint.distinct_attribute is not None:
        errs += validate_qualified_name(
            constraint.distinct_attribute, path.child("distinctAttribute"), require_domain=True
        )
    if constraint.cel is not None:
        # A KEP-5254 constraint over ``devices``.
        errs += validate_cel_expression(
            constraint.cel.expression,
            path.child("cel").child("expression"),
            stored,
            cel.compile_constraint,
        )
    return errs


def validate_request_refs(refs: list[str], path: Path, names: set[str]) -> list[FieldError]:
    """Each entry names a request of the claim, or ``<request>/<subrequest>``; no repeats."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, ref in enumerate(refs):
        p = path.index(i)
        errs += validate_request_ref(ref, p, names)
        if ref in seen:
            errs.append(field.duplicate(str(p), ref))
        seen.add(ref)
    return errs


def validate_request_ref(ref: str, path: Path, names: set[str]) -> list[FieldError]:
    if not ref:
        return [field.required(str(path))]
    parts = ref.split("/")
    if len(parts) > 2:
        return [field.invalid(str(path), ref, REQUEST_REF_DETAIL)]
    errs = field.invalid_each(path, ref, (e for part in parts for e in dns1123_label_errors(part)))
    if not errs and ref not in names:
        errs.append(field.invalid(str(path), ref, REQUEST_REF_DETAIL))
    return errs


def request_names(spec: ResourceClaimSpec) -> set[str]:
    """Names results, constraints and config may refer to: requests and request/subrequest."""
    names: set[str] = set()
    for request in spec.devices.requests or [] if spec.devices else []:
        names.add(request.name)
        names |= {f"{request.name}/{sub.name}" for sub in request.first_available or []}
    return names


# -- the status ---------------------------------------------------------------------------------


def validate_resource_claim_status_update(
    new: ResourceClaim, old: ResourceClaim
) -> list[FieldError]:
    """A write of the status subresource: ``new`` carries the stored spec and metadata."""
    status = new.status or ResourceClaimStatus()
    old_status = old.status or ResourceClaimStatus()
    path = Path("status")
    errs: list[FieldError] = []
    allocation = status.allocation
    if allocation is not None:
        if old_status.allocation is not None:
            errs += validate_immutable(allocation, old_status.allocation, path.child("allocation"))
        else:
            errs += validate_allocation(
                allocation, path.child("allocation"), request_names(new.spec)
            )
    errs += _validate_reserved_for(
        status,
        old_status,
        path.child("reservedFor"),
        deleting=bool(new.metadata.deletion_timestamp),
    )
    errs += _validate_device_statuses(
        status.devices or [], path.child("devices"), allocated_device_keys(allocation)
    )
    return errs


def allocated_device_keys(allocation: AllocationResult | None) -> set[DeviceKey]:
    if allocation is None or allocation.devices is None:
        return set()
    return {
        (r.driver, r.pool, r.device, r.share_id or "") for r in allocation.devices.results or []
    }


def validate_allocation(
    allocation: AllocationResult, path: Path, names: set[str]
) -> list[FieldError]:
    """A new allocation: results for requests of the claim, config, node selector."""
    errs: list[FieldError] = []
    devices = allocation.devices
    if devices is not None:
        dpath = path.child("devices")
        results = devices.results or []
        if len(results) > ALLOCATION_RESULTS_MAX:
            errs.append(
                field.too_many(str(dpath.child("results")), len(results), ALLOCATION_RESULTS_MAX)
            )
        for i, result in enumerate(results):
            errs += _validate_result(result, dpath.child("results").index(i), names)
        configs = devices.config or []
        if len(configs) > ALLOCATION_CONFIG_MAX:
            errs.append(
                field.too_many(str(dpath.child("config")), len(configs), ALLOCATION_CONFIG_MAX)
            )
        for i, config in enumerate(configs):
            p = dpath.child("config").index(i)
            errs += validate_request_refs(config.requests or [], p.child("requests"), names)
            errs += validate_opaque_configuration(config.opaque, p.child("opaque"))
    if allocation.node_selector is not None:
        errs += validate_node_selector(allocation.node_selector, path.child("nodeSelector"))
    return errs


def _validate_result(
    result: DeviceRequestAllocationResult, path: Path, names: set[str]
) -> list[FieldError]:
    errs = validate_request_ref(result.request, path.child("request"), names)
    errs += validate_driver_name(result.driver, path.child("driver"))
    errs += validate_pool_name(result.pool, path.child("pool"))
    errs += validate_device_name(result.device, path.child("device"))
    errs += validate_tolerations(result.tolerations or [], path.child("tolerations"))
    errs += _validate_binding_conditions(
        result.binding_conditions or [], result.binding_failure_conditions or [], path
    )
    if result.share_id is not None:
        errs += _validate_share_id(result.share_id, path.child("shareID"))
    cap_path = path.child("consumedCapacity")
    for name in result.consumed_capacity or {}:
        errs += validate_qualified_name(name, cap_path.key(name), require_domain=False)
    return errs


def _validate_binding_conditions(
    conditions: list[str], failure_conditions: list[str], path: Path
) -> list[FieldError]:
    """At most 4 of each, condition types, no repeats, no overlap, both lists or neither."""
    errs: list[FieldError] = []
    lists = (
        ("bindingConditions", conditions),
        ("bindingFailureConditions", failure_conditions),
    )
    for name, values in lists:
        p = path.child(name)
        if len(values) > BINDING_CONDITIONS_MAX:
            errs.append(field.too_many(str(p), len(values), BINDING_CONDITIONS_MAX))
        errs += validate_condition_names(values, p)
    errs += validate_binding_condition_pair(
        conditions,
        failure_conditions,
        path,
        overlap="must not also be a binding condition",
        failure_needed="must be set when bindingConditions is set",
        conditions_needed="must be set when bindingFailureConditions is set",
    )
    return errs


def _validate_share_id(share_id: str, path: Path) -> list[FieldError]:
    if _UUID.match(share_id):
        return []
    return [field.invalid(str(path), share_id, "must be a lower-case UUID (RFC 4122 form)")]


def _validate_reserved_for(
    status: ResourceClaimStatus, old_status: ResourceClaimStatus, path: Path, *, deleting: bool
) -> list[FieldError]:
    consumers = status.reserved_for or []
    errs: list[FieldError] = []
    if len(consumers) > RESERVED_FOR_MAX:
        errs.append(field.too_many(str(path), len(consumers), RESERVED_FOR_MAX))
    seen: set[str] = set()
    for i, ref in enumerate(consumers):
        p = path.index(i)
        if ref.api_group:
            errs += field.invalid_each(
                p.child("apiGroup"), ref.api_group, dns1123_subdomain_errors(ref.api_group)
            )
        for name, value in (("resource", ref.resource), ("name", ref.name), ("uid", ref.uid)):
            if not value:
                errs.append(field.required(str(p.child(name))))
        if ref.uid in seen:
            errs.append(field.duplicate(str(p.child("uid")), ref.uid))
        seen.add(ref.uid)
    if consumers and status.allocation is None:
        errs.append(field.forbidden(str(path), "may not be specified when `allocation` is not set"))
    if deleting:
        before = {ref.uid for ref in old_status.reserved_for or []}
        if not seen <= before:
            errs.append(
                field.forbidden(
                    str(path), "new entries may not be added while the claim is being deleted"
                )
            )
    return errs


def _validate_device_statuses(
    entries: list[AllocatedDeviceStatus], path: Path, allocated: set[DeviceKey]
) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[DeviceKey] = set()
    for i, entry in enumerate(entries):
        p = path.index(i)
        errs += validate_driver_name(entry.driver, p.child("driver"))
        errs += validate_pool_name(entry.pool, p.child("pool"))
        errs += validate_device_name(entry.device, p.child("device"))
        if entry.share_id is not None:
            errs += _validate_share_id(entry.share_id, p.child("shareID"))
        key = (entry.driver, entry.pool, entry.device, entry.share_id or "")
        if key in seen:
            errs.append(field.duplicate(str(p), _key_text(key)))
        elif key not in allocated:
            errs.append(
                field.invalid(str(p), _key_text(key), "must be an allocated device in the claim")
            )
        seen.add(key)
        if entry.node_name is not None:
            errs += validate_node_name(entry.node_name, p.child("nodeName"))
        conditions = entry.conditions or []
        if len(conditions) > DEVICE_CONDITIONS_MAX:
            errs.append(
                field.too_many(str(p.child("conditions")), len(conditions), DEVICE_CONDITIONS_MAX)
            )
        errs += validate_conditions(conditions, p.child("conditions"))
        if entry.data is not None:
            errs += validate_raw_object(entry.data, p.child("data"), DEVICE_DATA_MAX_LENGTH)
        if entry.network_data is not None:
            errs += _validate_network_data(entry.network_data, p.child("networkData"))
    return errs


def _key_text(key: DeviceKey) -> str:
    driver, pool, device, share_id = key
    text = f"{driver}/{pool}/{device}"
    return f"{text}/{share_id}" if share_id else text


def _validate_network_data(data: NetworkDeviceData, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if data.interface_name is not None and len(data.interface_name) > NETWORK_INTERFACE_NAME_MAX:
        errs.append(field.too_long(str(path.child("interfaceName")), NETWORK_INTERFACE_NAME_MAX))
    ips = data.ips or []
    if len(ips) > NETWORK_IPS_MAX:
        errs.append(field.too_many(str(path.child("ips")), len(ips), NETWORK_IPS_MAX))
    seen: set[str] = set()
    for i, ip in enumerate(ips):
        p = path.child("ips").index(i)
        if not _is_cidr(ip):
            errs.append(field.invalid(str(p), ip, "must be a valid address in CIDR form"))
        elif ip in seen:
            errs.append(field.duplicate(str(p), ip))
        seen.add(ip)
    if (
        data.hardware_address is not None
        and len(data.hardware_address) > NETWORK_HARDWARE_ADDRESS_MAX
    ):
        errs.append(
            field.too_long(str(path.child("hardwareAddress")), NETWORK_HARDWARE_ADDRESS_MAX)
        )
    return errs


def _is_cidr(value: str) -> bool:
    if "/" not in value:
        return False
    try:
        ipaddress.ip_interface(value)
    except ValueError:
        return False
    return True

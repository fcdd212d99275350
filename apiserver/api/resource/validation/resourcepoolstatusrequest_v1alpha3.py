"""Validation of the v1alpha3 ResourcePoolStatusRequest, by upstream's declarative markers
(``resource/v1alpha3/types.go``): a driver in ``k8s-long-name-caseless`` form, a pool name
of slash-separated DNS subdomains, ``1 <= limit <= 1000``, an immutable spec; in the status
a ``poolCount`` >= 0, at most 1,000 pools and 10 conditions, counts >= 0, a
``resourceSliceCount`` >= 1, a node name that is a DNS subdomain and a ``validationError``
of at most 256 bytes."""

from __future__ import annotations

from ... import field
from ...field import FieldError, Path
from ...metavalidation import validate_conditions
from ...names import dns1123_subdomain_errors
from ..resourcepoolstatusrequest_v1alpha3 import (
    CONDITIONS_MAX,
    POOLS_MAX,
    VALIDATION_ERROR_MAX_BYTES,
    PoolStatus,
    ResourcePoolStatusRequest,
    ResourcePoolStatusRequestStatus,
)
from .device import validate_pool_name
from .resourcepoolstatusrequest import validate_pool_and_limit, validate_spec_unchanged


def _long_name_caseless(value: str, path: Path) -> list[FieldError]:
    """``k8s-long-name-caseless``: a DNS subdomain, upper-case letters allowed."""
    return field.required_name(path, value, _subdomain_caseless_errors)


def _subdomain_caseless_errors(value: str) -> list[str]:
    return dns1123_subdomain_errors(value.lower())


def validate_request(request: ResourcePoolStatusRequest) -> list[FieldError]:
    spec = request.spec
    path = Path("spec")
    errs = _long_name_caseless(spec.driver, path.child("driver"))
    errs += validate_pool_and_limit(spec.pool_name, spec.limit, path)
    if spec.default_partition_type_attribute is not None:
        errs.append(
            field.forbidden(
                str(path.child("defaultPartitionTypeAttribute")),
                "this server does not compute partition summaries"
                " (the DRAPartitionableDevicesType feature)",
            )
        )
    return errs


def validate_request_update(
    new: ResourcePoolStatusRequest, old: ResourcePoolStatusRequest
) -> list[FieldError]:
    """The spec is immutable. An unchanged spec is not validated again: it was valid when it
    was written, in whichever version it was written."""
    return validate_spec_unchanged(new.spec, old.spec)


def _validate_pool(pool: PoolStatus, path: Path) -> list[FieldError]:
    errs = _long_name_caseless(pool.driver, path.child("driver"))
    errs += validate_pool_name(pool.pool_name, path.child("poolName"))
    errs += field.at_least(path.child("generation"), pool.generation, 0)
    errs += field.at_least(path.child("resourceSliceCount"), pool.resource_slice_count, 1)
    for json_name, value in (
        ("totalDevices", pool.total_devices),
        ("allocatedDevices", pool.allocated_devices),
        ("availableDevices", pool.available_devices),
        ("unavailableDevices", pool.unavailable_devices),
    ):
        errs += field.at_least(path.child(json_name), value, 0)
    if pool.node_name is not None:
        errs += field.invalid_each(
            path.child("nodeName"), pool.node_name, dns1123_subdomain_errors(pool.node_name)
        )
    message = pool.validation_error
    if message is not None and len(message.encode()) > VALIDATION_ERROR_MAX_BYTES:
        errs.append(field.too_long(str(path.child("validationError")), VALIDATION_ERROR_MAX_BYTES))
    return errs


def validate_request_status(status: ResourcePoolStatusRequestStatus | None) -> list[FieldError]:
    if status is None:
        return []
    path = Path("status")
    errs: list[FieldError] = []
    if status.pool_count is None:
        errs.append(field.required(str(path.child("poolCount"))))
    errs += field.at_least(path.child("poolCount"), status.pool_count, 0)
    pools = status.pools or []
    if len(pools) > POOLS_MAX:
        errs.append(field.too_many(str(path.child("pools")), len(pools), POOLS_MAX))
    for i, pool in enumerate(pools):
        errs += _validate_pool(pool, path.child("pools").index(i))
    conditions = status.conditions or []
    if len(conditions) > CONDITIONS_MAX:
        errs.append(field.too_many(str(path.child("conditions")), len(conditions), CONDITIONS_MAX))
    errs += validate_conditions(conditions, path.child("conditions"))
    return errs

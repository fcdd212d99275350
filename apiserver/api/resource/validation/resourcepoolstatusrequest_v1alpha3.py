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
from ..resourcepoolstatusrequest import LIMIT_MAX
from ..resourcepoolstatusrequest_v1alpha3 import (
    CONDITIONS_MAX,
    POOLS_MAX,
    VALIDATION_ERROR_MAX_BYTES,
    PoolStatus,
    ResourcePoolStatusRequest,
    ResourcePoolStatusRequestStatus,
)
from .device import validate_pool_name


def _long_name_caseless(value: str, path: Path) -> list[FieldError]:
    """``k8s-long-name-caseless``: a DNS subdomain, upper-case letters allowed."""
    if not value:
        return [field.required(str(path))]
    return [field.invalid(str(path), value, e) for e in dns1123_subdomain_errors(value.lower())]


def _at_least(value: int | None, minimum: int, path: Path) -> list[FieldError]:
    if value is None or value >= minimum:
        return []
    return [field.invalid(str(path), value, f"must be greater than or equal to {minimum}")]


def validate_request(request: ResourcePoolStatusRequest) -> list[FieldError]:
    spec = request.spec
    path = Path("spec")
    errs = _long_name_caseless(spec.driver, path.child("driver"))
    if spec.pool_name is not None:
        errs += validate_pool_name(spec.pool_name, path.child("poolName"))
    if spec.limit is not None and not 1 <= spec.limit <= LIMIT_MAX:
        errs.append(
            field.invalid(
                str(path.child("limit")),
                spec.limit,
                f"must be between 1 and {LIMIT_MAX}, inclusive",
            )
        )
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
    if new.spec != old.spec:
        return [
            field.invalid(
                "spec", new.spec.model_dump(by_alias=True, exclude_none=True), "field is immutable"
            )
        ]
    return []


def _validate_pool(pool: PoolStatus, path: Path) -> list[FieldError]:
    errs = _long_name_caseless(pool.driver, path.child("driver"))
    errs += validate_pool_name(pool.pool_name, path.child("poolName"))
    errs += _at_least(pool.generation, 0, path.child("generation"))
    errs += _at_least(pool.resource_slice_count, 1, path.child("resourceSliceCount"))
    for json_name, value in (
        ("totalDevices", pool.total_devices),
        ("allocatedDevices", pool.allocated_devices),
        ("availableDevices", pool.available_devices),
        ("unavailableDevices", pool.unavailable_devices),
    ):
        errs += _at_least(value, 0, path.child(json_name))
    if pool.node_name is not None:
        errs += [
            field.invalid(str(path.child("nodeName")), pool.node_name, e)
            for e in dns1123_subdomain_errors(pool.node_name)
        ]
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
    errs += _at_least(status.pool_count, 0, path.child("poolCount"))
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

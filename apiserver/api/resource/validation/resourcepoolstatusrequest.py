"""Validation of ResourcePoolStatusRequest (KEP-5677)."""

from __future__ import annotations

from ... import field
from ...base import APIModel
from ...field import FieldError, Path
from ...metavalidation import validate_conditions
from ...names import dns1123_label_errors
from ..resourcepoolstatusrequest import (
    LIMIT_MAX,
    TTL_MAX,
    VALIDATION_ERROR_MAX_LENGTH,
    VALIDATION_ERRORS_MAX,
    ResourcePoolStatusRequest,
    ResourcePoolStatusRequestStatus,
)
from .device import validate_driver_name, validate_pool_name


def validate_driver_filter(driver: str, path: Path) -> list[FieldError]:
    """A driver name, or the ``domain/name`` form the KEP's own examples use (``example.com/gpu``).

    Upstream driver names cannot contain a slash; the KEP's user stories nonetheless ask
    for ``example.com/gpu``, and we accept them as written. Such a filter simply matches
    the pools of a driver published under that exact name.
    """
    domain, slash, name = driver.partition("/")
    if not slash:
        return validate_driver_name(driver, path)
    errs = validate_driver_name(domain, path)
    errs += field.invalid_each(path, driver, dns1123_label_errors(name))
    return errs


def validate_pool_and_limit(
    pool_name: str | None, limit: int | None, path: Path
) -> list[FieldError]:
    """The spec rules every served version shares (the driver's rule differs): an optional
    pool name, and a limit between 1 and ``LIMIT_MAX`` when set."""
    errs: list[FieldError] = []
    if pool_name is not None:
        errs += validate_pool_name(pool_name, path.child("poolName"))
    errs += field.in_range(path.child("limit"), limit, 1, LIMIT_MAX)
    return errs


def validate_spec_unchanged(new: APIModel, old: APIModel) -> list[FieldError]:
    """The spec is immutable, like a CertificateSigningRequest's, in every served version."""
    if new != old:
        return [
            field.invalid(
                "spec", new.model_dump(by_alias=True, exclude_none=True), "field is immutable"
            )
        ]
    return []


def validate_resource_pool_status_request(request: ResourcePoolStatusRequest) -> list[FieldError]:
    spec = request.spec
    path = Path("spec")
    errs = validate_driver_filter(spec.driver, path.child("driver"))
    errs += validate_pool_and_limit(spec.pool_name, spec.limit, path)
    errs += field.in_range(
        path.child("ttlSecondsAfterComplete"), spec.ttl_seconds_after_complete, 0, TTL_MAX
    )
    return errs


def validate_resource_pool_status_request_update(
    new: ResourcePoolStatusRequest, old: ResourcePoolStatusRequest
) -> list[FieldError]:
    return validate_spec_unchanged(new.spec, old.spec)


def validate_resource_pool_status_request_status(
    status: ResourcePoolStatusRequestStatus | None,
) -> list[FieldError]:
    if status is None:
        return []
    path = Path("status")
    errs: list[FieldError] = []
    pools = status.pools or []
    for i, pool in enumerate(pools):
        p = path.child("pools").index(i)
        errs += validate_driver_filter(pool.driver, p.child("driver"))
        errs += validate_pool_name(pool.pool_name, p.child("poolName"))
        for json_name, value in (
            ("totalDevices", pool.total_devices),
            ("allocatedDevices", pool.allocated_devices),
            ("availableDevices", pool.available_devices),
            ("unavailableDevices", pool.unavailable_devices),
            ("sliceCount", pool.slice_count),
            ("generation", pool.generation),
        ):
            errs += field.at_least(p.child(json_name), value, 0)
    if len(pools) > LIMIT_MAX:
        errs.append(field.too_many(str(path.child("pools")), len(pools), LIMIT_MAX))
    messages = status.validation_errors or []
    if len(messages) > VALIDATION_ERRORS_MAX:
        errs.append(
            field.too_many(
                str(path.child("validationErrors")), len(messages), VALIDATION_ERRORS_MAX
            )
        )
    for i, message in enumerate(messages):
        if len(message) > VALIDATION_ERROR_MAX_LENGTH:
            errs.append(
                field.too_long(
                    str(path.child("validationErrors").index(i)), VALIDATION_ERROR_MAX_LENGTH
                )
            )
    errs += field.at_least(path.child("totalMatchingPools"), status.total_matching_pools, 0)
    errs += validate_conditions(status.conditions or [], path.child("conditions"))
    return errs

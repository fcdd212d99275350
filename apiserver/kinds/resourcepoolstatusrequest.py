"""ResourcePoolStatusRequest (KEP-5677): cluster-scoped, status subresource, short name ``rpsr``.

This is the seed's ``v1alpha1``, the version objects are stored in; upstream's ``v1alpha3``
is served beside it, converted (``resourcepoolstatusrequest_v1alpha3``).

Like a CertificateSigningRequest, the spec is fixed at creation; ``limit`` defaults to
the KEP's 100. Creation may be rate-limited per user (one of the KEP's Beta items): that is
an admission plugin (``admission.CreateRateLimit``) the server assembles, not the kind's.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..api.field import FieldError
from ..api.resource import (
    LIMIT_DEFAULT,
    ResourcePoolStatusRequest,
    validate_resource_pool_status_request,
    validate_resource_pool_status_request_status,
    validate_resource_pool_status_request_update,
)
from ..machinery import Column, FieldGetter, Strategy, path, string_at

VERSION = "v1alpha1"


def condition_status(condition_type: str) -> Any:
    """The status of a request's condition of this type, for a column."""

    def get(obj: dict[str, Any]) -> str | None:
        for cond in obj.get("status", {}).get("conditions") or []:
            if isinstance(cond, dict) and cond.get("type") == condition_type:
                return str(cond.get("status"))
        return None

    return get


def _pool_count(obj: dict[str, Any]) -> int | None:
    status = obj.get("status") or {}
    if status.get("totalMatchingPools") is not None:
        return int(status["totalMatchingPools"])
    pools = status.get("pools")
    return len(pools) if isinstance(pools, list) else None


def default_limit(obj: dict[str, Any]) -> None:
    """``spec.limit`` defaulted, in every served version, on create and on update (re-sending
    the manifest as written, without the defaulted limit, is not a change)."""
    spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("limit") is None:
        spec["limit"] = LIMIT_DEFAULT


class ResourcePoolStatusRequestStrategy(Strategy[ResourcePoolStatusRequest]):
    model = ResourcePoolStatusRequest
    version = VERSION
    kind = "ResourcePoolStatusRequest"
    plural = "resourcepoolstatusrequests"
    singular = "resourcepoolstatusrequest"
    short_names = ("rpsr",)
    has_status = True
    returns_deleted_object = True
    columns: ClassVar[tuple[Column, ...]] = (
        Column("Driver", "string", path("spec", "driver"), "Driver whose pools are reported."),
        Column("Pool", "string", path("spec", "poolName"), "Pool filter, if any."),
        Column(
            "Complete", "string", condition_status("Complete"), "Whether the calculation is done."
        ),
        Column("Pools", "integer", _pool_count, "Pools matching the request."),
        Column(
            "Truncated",
            "boolean",
            path("status", "truncated"),
            "More pools matched than the limit.",
            priority=1,
        ),
    )
    extra_field_getters: ClassVar[dict[str, FieldGetter]] = {
        "spec.driver": string_at("spec", "driver")
    }

    create_rate_limited = True

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        default_limit(obj)

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        default_limit(obj)

    def validate(self, obj: ResourcePoolStatusRequest) -> list[FieldError]:
        return validate_resource_pool_status_request(obj)

    def validate_update(
        self, new: ResourcePoolStatusRequest, old: ResourcePoolStatusRequest
    ) -> list[FieldError]:
        return validate_resource_pool_status_request_update(new, old) or self.validate(new)

    def validate_status(self, obj: ResourcePoolStatusRequest) -> list[FieldError]:
        return validate_resource_pool_status_request_status(obj.status)

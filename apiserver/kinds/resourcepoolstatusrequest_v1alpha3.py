"""ResourcePoolStatusRequest in upstream's ``v1alpha3`` shape, served beside the stored
``v1alpha1`` (``resourcepoolstatusrequest``) and converted to it: an object created in
either version is read in both, at the same resourceVersion. The controller, the TTL
cleanup and the per-user creation limit all work on the one stored object; what the two
shapes cannot both say is in ``api.resource.resourcepoolstatusrequest_conversion``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..api.field import FieldError
from ..api.resource import POOL_STATUS_REQUEST_V1ALPHA3 as VERSION
from ..api.resource import ResourcePoolStatusRequestV1alpha3 as ResourcePoolStatusRequest
from ..api.resource import pool_status_request_to_v1alpha1 as to_v1alpha1
from ..api.resource import pool_status_request_to_v1alpha3 as to_v1alpha3
from ..api.resource import validate_pool_status_request_status_v1alpha3 as validate_request_status
from ..api.resource import validate_pool_status_request_update_v1alpha3 as validate_request_update
from ..api.resource import validate_pool_status_request_v1alpha3 as validate_request
from ..machinery import Column, Conversion, FieldGetter, Strategy, path, string_at
from .resourcepoolstatusrequest import VERSION as STORED_VERSION
from .resourcepoolstatusrequest import (
    ResourcePoolStatusRequestStrategy,
    condition_status,
    default_limit,
)


def _truncated(obj: dict[str, Any]) -> bool | None:
    status = obj.get("status") or {}
    count = status.get("poolCount")
    if not isinstance(count, int):
        return None
    return count > len(status.get("pools") or [])


class ResourcePoolStatusRequestV1alpha3Strategy(Strategy[ResourcePoolStatusRequest]):
    model = ResourcePoolStatusRequest
    version = VERSION
    kind = ResourcePoolStatusRequestStrategy.kind
    plural = ResourcePoolStatusRequestStrategy.plural
    singular = ResourcePoolStatusRequestStrategy.singular
    short_names = ResourcePoolStatusRequestStrategy.short_names
    has_status = True
    returns_deleted_object = True
    create_rate_limited = True
    conversion = Conversion(STORED_VERSION, to_stored=to_v1alpha1, from_stored=to_v1alpha3)
    columns: ClassVar[tuple[Column, ...]] = (
        Column("Driver", "string", path("spec", "driver"), "Driver whose pools are reported."),
        Column("Pool", "string", path("spec", "poolName"), "Pool filter, if any."),
        Column(
            "Complete", "string", condition_status("Complete"), "Whether the calculation is done."
        ),
        Column("Pools", "integer", path("status", "poolCount"), "Pools matching the request."),
        Column(
            "Truncated", "boolean", _truncated, "More pools matched than the limit.", priority=1
        ),
    )
    extra_field_getters: ClassVar[dict[str, FieldGetter]] = {
        "spec.driver": string_at("spec", "driver")
    }

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        default_limit(obj)

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        default_limit(obj)

    def validate(self, obj: ResourcePoolStatusRequest) -> list[FieldError]:
        return validate_request(obj)

    def validate_update(
        self, new: ResourcePoolStatusRequest, old: ResourcePoolStatusRequest
    ) -> list[FieldError]:
        return validate_request_update(new, old)

    def validate_status(self, obj: ResourcePoolStatusRequest) -> list[FieldError]:
        return validate_request_status(obj.status)

"""ResourceClaim (``resource.k8s.io/v1``, standalone mode): namespaced, status subresource.

The spec is immutable and defaulted as upstream; ``kubectl get`` prints the claim's STATE
the way kubectl does for the built-in kind.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..api.field import FieldError
from ..api.resource import (
    DRA_GROUP,
    DRA_VERSION,
    ResourceClaim,
    set_claim_spec_defaults,
    validate_resource_claim,
    validate_resource_claim_status_update,
    validate_resource_claim_update,
)
from ..machinery import Column, FieldGetter, Strategy


def claim_state(obj: dict[str, Any]) -> str:
    """``pending``, ``allocated``, ``allocated,reserved``, with ``deleted`` first once the
    deletion has been requested (a deleted claim that is not allocated is just ``deleted``)."""
    status = obj.get("status") or {}
    states = []
    deleted = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    if deleted:
        states.append("deleted")
    if status.get("allocation"):
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    elif not deleted:
        states.append("pending")
    return ",".join(states)


def _flag(present: bool) -> str:
    return "true" if present else "false"


def _allocated(obj: dict[str, Any]) -> str:
    return _flag(bool((obj.get("status") or {}).get("allocation")))


def _reserved(obj: dict[str, Any]) -> str:
    return _flag(bool((obj.get("status") or {}).get("reservedFor")))


class ResourceClaimStrategy(Strategy[ResourceClaim]):
    model = ResourceClaim
    version = DRA_VERSION
    kind = "ResourceClaim"
    plural = "resourceclaims"
    singular = "resourceclaim"
    namespaced = True
    has_status = True
    columns: ClassVar[tuple[Column, ...]] = (
        Column(
            "State",
            "string",
            claim_state,
            "Whether the claim is pending, allocated, reserved for a consumer, or deleted.",
        ),
    )
    extra_field_getters: ClassVar[dict[str, FieldGetter]] = {
        "status.allocated": _allocated,
        "status.reserved": _reserved,
    }

    @classmethod
    def upstream(cls) -> ResourceClaimStrategy:
        return cls(DRA_GROUP)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            set_claim_spec_defaults(spec)

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        # Defaults apply on every write, so a spec re-sent without them is not a change.
        self.prepare_for_create(obj)

    def validate(self, obj: ResourceClaim) -> list[FieldError]:
        return validate_resource_claim(obj)

    def validate_update(self, new: ResourceClaim, old: ResourceClaim) -> list[FieldError]:
        return validate_resource_claim_update(new, old)

    def validate_status_update(self, new: ResourceClaim, old: ResourceClaim) -> list[FieldError]:
        return validate_resource_claim_status_update(new, old)

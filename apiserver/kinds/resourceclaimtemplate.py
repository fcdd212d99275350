"""ResourceClaimTemplate (``resource.k8s.io/v1``, standalone mode): namespaced, spec immutable."""

from __future__ import annotations

from typing import Any

from ..api.field import FieldError
from ..api.resource import (
    DRA_GROUP,
    DRA_VERSION,
    ResourceClaimTemplate,
    set_claim_spec_defaults,
    validate_resource_claim_template,
    validate_resource_claim_template_update,
)
from ..machinery import Strategy


class ResourceClaimTemplateStrategy(Strategy[ResourceClaimTemplate]):
    model = ResourceClaimTemplate
    version = DRA_VERSION
    kind = "ResourceClaimTemplate"
    plural = "resourceclaimtemplates"
    singular = "resourceclaimtemplate"
    namespaced = True

    @classmethod
    def upstream(cls) -> ResourceClaimTemplateStrategy:
        return cls(DRA_GROUP)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        claim_spec = spec.get("spec") if isinstance(spec, dict) else None
        if isinstance(claim_spec, dict):
            set_claim_spec_defaults(claim_spec)

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        # Defaults apply on every write, so a spec re-sent without them is not a change.
        self.prepare_for_create(obj)

    def validate(self, obj: ResourceClaimTemplate) -> list[FieldError]:
        return validate_resource_claim_template(obj)

    def validate_update(
        self, new: ResourceClaimTemplate, old: ResourceClaimTemplate
    ) -> list[FieldError]:
        return validate_resource_claim_template_update(new, old)

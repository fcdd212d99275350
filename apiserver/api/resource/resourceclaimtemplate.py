"""``resource.k8s.io/v1`` ResourceClaimTemplate: the blueprint of per-pod ResourceClaims."""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel
from ..meta import KindModel, ObjectMeta
from .resourceclaim import ResourceClaimSpec


class ResourceClaimTemplateSpec(APIModel):
    """What a ResourceClaim created from the template contains."""

    metadata: ObjectMeta | None = Field(
        None,
        description="ObjectMeta may contain labels and annotations that will be copied into the "
        "ResourceClaim when creating it. No other fields are allowed and will be rejected "
        "during validation.",
    )
    spec: ResourceClaimSpec = Field(
        description="Spec for the ResourceClaim. The entire content is copied unchanged into "
        "the ResourceClaim that gets created from this template. The same fields as in a "
        "ResourceClaim are also valid here."
    )


class ResourceClaimTemplate(KindModel):
    """Produces ResourceClaims: each pod that references it gets a claim of its own."""

    spec: ResourceClaimTemplateSpec = Field(
        description="Describes the ResourceClaim that is to be generated. This field is "
        "immutable. A ResourceClaim will get created by the control plane for a Pod when "
        "needed and then not get updated anymore."
    )

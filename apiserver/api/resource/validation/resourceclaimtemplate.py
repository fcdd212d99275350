"""Validation of ResourceClaimTemplate: the claim's metadata and spec, both immutable."""

from __future__ import annotations

from ...field import FieldError, Path
from ...meta import ObjectMeta
from ...metavalidation import validate_annotations, validate_labels
from ..resourceclaimtemplate import ResourceClaimTemplate
from .resourceclaim import claim_spec_expressions, validate_claim_spec, validate_immutable


def validate_resource_claim_template(template: ResourceClaimTemplate) -> list[FieldError]:
    path = Path("spec")
    errs: list[FieldError] = []
    if template.spec.metadata is not None:
        errs += _validate_template_meta(template.spec.metadata, path.child("metadata"))
    errs += validate_claim_spec(template.spec.spec, path.child("spec"))
    return errs


def validate_resource_claim_template_update(
    new: ResourceClaimTemplate, old: ResourceClaimTemplate
) -> list[FieldError]:
    """The spec is immutable, as upstream; expressions already stored are not compiled again."""
    path = Path("spec")
    errs = validate_immutable(new.spec, old.spec, path)
    if new.spec.metadata is not None:
        errs += _validate_template_meta(new.spec.metadata, path.child("metadata"))
    errs += validate_claim_spec(
        new.spec.spec, path.child("spec"), stored=claim_spec_expressions(old.spec.spec)
    )
    return errs


def _validate_template_meta(meta: ObjectMeta, path: Path) -> list[FieldError]:
    """Labels and annotations are what generated claims get; as upstream, only they are checked."""
    errs = validate_labels(meta.labels or {}, path.child("labels"))
    errs += validate_annotations(meta.annotations or {}, path.child("annotations"))
    return errs

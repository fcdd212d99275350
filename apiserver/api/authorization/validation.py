"""Validation of access reviews, following the rules kube-apiserver applies to them."""

from __future__ import annotations

from .. import field
from ..field import FieldError
from .types import SelfSubjectAccessReviewSpec, SubjectAccessReview, SubjectAccessReviewSpec


def _one_of_attributes(
    spec: SubjectAccessReviewSpec | SelfSubjectAccessReviewSpec,
) -> list[FieldError]:
    if spec.resource_attributes is not None and spec.non_resource_attributes is not None:
        return [
            field.invalid(
                "spec.nonResourceAttributes",
                spec.non_resource_attributes.model_dump(by_alias=True, exclude_none=True),
                "cannot be specified in combination with resourceAttributes",
            )
        ]
    if spec.resource_attributes is None and spec.non_resource_attributes is None:
        return [
            field.invalid(
                "spec.resourceAttributes",
                None,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        ]
    return []


def validate_subject_access_review(review: SubjectAccessReview) -> list[FieldError]:
    errs = _one_of_attributes(review.spec)
    if not review.spec.user and not review.spec.groups:
        errs.append(
            field.invalid(
                "spec.user",
                review.spec.user or "",
                "at least one of user or group must be specified",
            )
        )
    return errs


def validate_self_subject_access_review(spec: SelfSubjectAccessReviewSpec) -> list[FieldError]:
    return _one_of_attributes(spec)

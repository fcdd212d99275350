"""Types of the ``authorization.k8s.io`` group: access reviews and rules reviews.

The group's face: other layers import from here, never from its modules; ``group`` (the group
and version names) is light and may be named directly by code that must not load the rest."""

from .group import AUTHORIZATION_GROUP, AUTHORIZATION_VERSION
from .protobuf import KINDS
from .types import (
    NonResourceAttributes,
    ResourceAttributes,
    SelfSubjectAccessReview,
    SelfSubjectAccessReviewSpec,
    SelfSubjectRulesReview,
    SubjectAccessReview,
    SubjectAccessReviewSpec,
)
from .validation import validate_self_subject_access_review, validate_subject_access_review

__all__ = [
    "AUTHORIZATION_GROUP",
    "AUTHORIZATION_VERSION",
    "KINDS",
    "NonResourceAttributes",
    "ResourceAttributes",
    "SelfSubjectAccessReview",
    "SelfSubjectAccessReviewSpec",
    "SelfSubjectRulesReview",
    "SubjectAccessReview",
    "SubjectAccessReviewSpec",
    "validate_self_subject_access_review",
    "validate_subject_access_review",
]

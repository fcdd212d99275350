"""Types of the ``authentication.k8s.io`` group: TokenReview and SelfSubjectReview.

The group's face: other layers import from here, never from its modules; ``group`` (the group
and version names) is light and may be named directly by code that must not load the rest."""

from .group import AUTHENTICATION_GROUP, AUTHENTICATION_VERSION
from .protobuf import KINDS
from .types import SelfSubjectReview, TokenReview, TokenReviewSpec

__all__ = [
    "AUTHENTICATION_GROUP",
    "AUTHENTICATION_VERSION",
    "KINDS",
    "SelfSubjectReview",
    "TokenReview",
    "TokenReviewSpec",
]

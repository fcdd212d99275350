"""Types of the ``authentication.k8s.io`` group: TokenReview and SelfSubjectReview.

The group's face: other layers import from here, never from its modules."""

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

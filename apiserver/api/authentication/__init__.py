"""Types of the ``authentication.k8s.io`` group: TokenReview and SelfSubjectReview."""

AUTHENTICATION_GROUP = "authentication.k8s.io"
AUTHENTICATION_VERSION = "v1"

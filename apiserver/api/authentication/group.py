"""The group and version of the ``authentication.k8s.io`` kinds."""

AUTHENTICATION_GROUP = "authentication.k8s.io"
AUTHENTICATION_VERSION = "v1"

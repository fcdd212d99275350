"""The group and version of the ``authorization.k8s.io`` kinds."""

AUTHORIZATION_GROUP = "authorization.k8s.io"
AUTHORIZATION_VERSION = "v1"

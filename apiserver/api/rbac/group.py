"""The group and version of the ``rbac.authorization.k8s.io`` kinds."""

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_VERSION = "v1"

"""Types of the ``rbac.authorization.k8s.io`` group: roles, bindings and their validation."""

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_VERSION = "v1"

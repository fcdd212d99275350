"""Types of the ``rbac.authorization.k8s.io`` group: roles, bindings and their validation.

The group's face: other layers import from here, never from its modules; ``group`` (the group
and version names) is light and may be named directly by code that must not load the rest."""

from .group import RBAC_GROUP, RBAC_VERSION
from .protobuf import KINDS
from .types import ClusterRole, ClusterRoleBinding, Role, RoleBinding
from .validation import (
    path_segment_name_errors,
    validate_cluster_role,
    validate_cluster_role_binding,
    validate_role,
    validate_role_binding,
    validate_role_ref_unchanged,
)

__all__ = [
    "KINDS",
    "RBAC_GROUP",
    "RBAC_VERSION",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "path_segment_name_errors",
    "validate_cluster_role",
    "validate_cluster_role_binding",
    "validate_role",
    "validate_role_binding",
    "validate_role_ref_unchanged",
]

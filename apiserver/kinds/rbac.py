"""RBAC kinds (``rbac.authorization.k8s.io/v1``, standalone mode), printed as kubectl prints them.

Roles print NAME and CREATED AT; bindings NAME, ROLE and AGE, with USERS, GROUPS and
SERVICEACCOUNTS under ``-o wide``. Subjects and role references get upstream's v1 defaults
(the RBAC group for Users and Groups), and a binding's role reference is fixed at creation.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..api.field import FieldError
from ..api.rbac import (
    RBAC_GROUP,
    RBAC_VERSION,
    ClusterRole,
    ClusterRoleBinding,
    Role,
    RoleBinding,
    path_segment_name_errors,
    validate_cluster_role,
    validate_cluster_role_binding,
    validate_role,
    validate_role_binding,
    validate_role_ref_unchanged,
)
from ..machinery import AGE_COLUMN, NAME_COLUMN, Column, Strategy

CREATED_AT_COLUMN = Column(
    "Created At",
    "date",
    lambda obj: obj.get("metadata", {}).get("creationTimestamp"),
    "When the role was created.",
)


def _role_ref(obj: dict[str, Any]) -> str:
    ref = obj.get("roleRef") or {}
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _subjects(kind: str) -> Any:
    def get(obj: dict[str, Any]) -> str:
        names = []
        for subject in obj.get("subjects") or []:
            if not isinstance(subject, dict) or subject.get("kind") != kind:
                continue
            name = str(subject.get("name", ""))
            names.append(
                f"{subject.get('namespace', '')}:{name}" if kind == "ServiceAccount" else name
            )
        return ", ".join(names)

    return get


BINDING_COLUMNS = (
    Column("Role", "string", _role_ref, "The role the binding grants."),
    AGE_COLUMN,
    Column("Users", "string", _subjects("User"), "Users the role is granted to.", priority=1),
    Column("Groups", "string", _subjects("Group"), "Groups the role is granted to.", priority=1),
    Column(
        "ServiceAccounts",
        "string",
        _subjects("ServiceAccount"),
        "Service accounts the role is granted to.",
        priority=1,
    ),
)


def default_binding(obj: dict[str, Any]) -> None:
    """Upstream's v1 defaults: the RBAC group on the role reference and on User and Group
    subjects that leave it out."""
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = RBAC_GROUP
    for subject in obj.get("subjects") or []:
        if (
            isinstance(subject, dict)
            and subject.get("kind") in ("User", "Group")
            and not subject.get("apiGroup")
        ):
            subject["apiGroup"] = RBAC_GROUP


class _RBACStrategy:
    """What every RBAC kind shares: its group and version, and path-segment names."""

    version = RBAC_VERSION

    def name_errors(self, name: str) -> list[str]:
        return path_segment_name_errors(name)


class RoleStrategy(_RBACStrategy, Strategy[Role]):
    model = Role
    kind = "Role"
    plural = "roles"
    singular = "role"
    namespaced = True

    @classmethod
    def upstream(cls) -> RoleStrategy:
        return cls(RBAC_GROUP)

    def validate(self, obj: Role) -> list[FieldError]:
        return validate_role(obj)

    def table_columns(self) -> tuple[Column, ...]:
        return (NAME_COLUMN, CREATED_AT_COLUMN)


class ClusterRoleStrategy(_RBACStrategy, Strategy[ClusterRole]):
    model = ClusterRole
    kind = "ClusterRole"
    plural = "clusterroles"
    singular = "clusterrole"

    @classmethod
    def upstream(cls) -> ClusterRoleStrategy:
        return cls(RBAC_GROUP)

    def validate(self, obj: ClusterRole) -> list[FieldError]:
        return validate_cluster_role(obj)

    def table_columns(self) -> tuple[Column, ...]:
        return (NAME_COLUMN, CREATED_AT_COLUMN)


class _BindingStrategy(_RBACStrategy):
    """What both binding kinds share: their columns, upstream's v1 defaults, and a role
    reference fixed at creation."""

    columns: ClassVar[tuple[Column, ...]] = BINDING_COLUMNS

    def validate(self, obj: Any) -> list[FieldError]:
        """Each binding kind's own (which ``validate_update`` runs too)."""
        raise NotImplementedError

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        default_binding(obj)

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        default_binding(obj)

    def validate_update(
        self, new: RoleBinding | ClusterRoleBinding, old: RoleBinding | ClusterRoleBinding
    ) -> list[FieldError]:
        return validate_role_ref_unchanged(new.role_ref, old.role_ref) + self.validate(new)

    def table_columns(self) -> tuple[Column, ...]:
        return (NAME_COLUMN, *self.columns)


class RoleBindingStrategy(_BindingStrategy, Strategy[RoleBinding]):
    model = RoleBinding
    kind = "RoleBinding"
    plural = "rolebindings"
    singular = "rolebinding"
    namespaced = True

    @classmethod
    def upstream(cls) -> RoleBindingStrategy:
        return cls(RBAC_GROUP)

    def validate(self, obj: RoleBinding) -> list[FieldError]:
        return validate_role_binding(obj)


class ClusterRoleBindingStrategy(_BindingStrategy, Strategy[ClusterRoleBinding]):
    model = ClusterRoleBinding
    kind = "ClusterRoleBinding"
    plural = "clusterrolebindings"
    singular = "clusterrolebinding"

    @classmethod
    def upstream(cls) -> ClusterRoleBindingStrategy:
        return cls(RBAC_GROUP)

    def validate(self, obj: ClusterRoleBinding) -> list[FieldError]:
        return validate_cluster_role_binding(obj)

"""``rbac.authorization.k8s.io/v1``: Role, ClusterRole, RoleBinding, ClusterRoleBinding.

The shapes are upstream's: rules at the top level of a role (no spec), a binding's
``roleRef`` and ``subjects`` likewise. A ClusterRole with an ``aggregationRule`` has its
rules written by the server, as the union of the rules of the ClusterRoles it selects.
"""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel
from ..meta import KindModel


class LabelSelectorRequirement(APIModel):
    """A label key, an operator and values (``metav1.LabelSelectorRequirement``)."""

    key: str = Field(description="The label key that the selector applies to.")
    operator: str = Field(description="In, NotIn, Exists or DoesNotExist.")
    values: list[str] | None = Field(
        None, description="Values for In and NotIn; empty for Exists and DoesNotExist."
    )


class LabelSelector(APIModel):
    """A label query over a set of objects (``metav1.LabelSelector``); empty matches all."""

    match_labels: dict[str, str] | None = Field(
        None, description="Labels that must be present with these values."
    )
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        None, description="Requirements that must all hold."
    )


class PolicyRule(APIModel):
    """Operations a role allows: verbs on resources of API groups, or on non-resource URLs."""

    verbs: list[str] = Field(
        description="Verbs that apply to all the resources of this rule; '*' is every verb."
    )
    api_groups: list[str] | None = Field(
        None,
        alias="apiGroups",
        description="API groups of the resources; '' is the core group, '*' every group.",
    )
    resources: list[str] | None = Field(
        None,
        description="Resources this rule applies to; '*' is every resource, 'x/status' a "
        "subresource, '*/status' that subresource of every resource.",
    )
    resource_names: list[str] | None = Field(
        None, description="An optional allow-list of object names; empty means all."
    )
    non_resource_urls: list[str] | None = Field(
        None,
        alias="nonResourceURLs",
        description="Partial URLs a user may access; a trailing '*' is a prefix match. "
        "Only in ClusterRoles bound by ClusterRoleBindings.",
    )


class AggregationRule(APIModel):
    """Which ClusterRoles' rules make up an aggregated ClusterRole."""

    cluster_role_selectors: list[LabelSelector] | None = Field(
        None,
        description="ClusterRoles matching any of these selectors contribute their rules.",
    )


class Role(KindModel):
    """A namespaced set of rules, bound by RoleBindings."""

    rules: list[PolicyRule] | None = Field(None, description="All the rules of this role.")


class ClusterRole(KindModel):
    """A cluster-wide set of rules, bound by ClusterRoleBindings or by RoleBindings."""

    rules: list[PolicyRule] | None = Field(None, description="All the rules of this role.")
    aggregation_rule: AggregationRule | None = Field(
        None,
        description="How to build this role's rules from other ClusterRoles; when set, the "
        "rules are controller-managed and direct changes to them are overwritten.",
    )


class Subject(APIModel):
    """Whom a binding grants to: a User, a Group or a ServiceAccount."""

    kind: str = Field(description="User, Group or ServiceAccount.")
    api_group: str | None = Field(
        None,
        description="'' for ServiceAccount, 'rbac.authorization.k8s.io' for User and Group.",
    )
    name: str = Field(description="Name of the object being referenced.")
    namespace: str | None = Field(
        None, description="Namespace of a ServiceAccount; must be empty for User and Group."
    )


class RoleRef(APIModel):
    """The role a binding grants; it cannot be changed once the binding exists."""

    api_group: str | None = Field(
        None, description="rbac.authorization.k8s.io (the default when left out)."
    )
    kind: str = Field(description="Role or ClusterRole.")
    name: str = Field(description="Name of the role.")


class RoleBinding(KindModel):
    """Grants a Role, or a ClusterRole within this namespace, to subjects."""

    subjects: list[Subject] | None = Field(None, description="Who the role is granted to.")
    role_ref: RoleRef = Field(description="The Role or ClusterRole granted.")


class ClusterRoleBinding(KindModel):
    """Grants a ClusterRole cluster-wide to subjects."""

    subjects: list[Subject] | None = Field(None, description="Who the role is granted to.")
    role_ref: RoleRef = Field(description="The ClusterRole granted.")

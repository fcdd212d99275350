"""The RBAC authorizer: allow what some bound role's rule allows, else no opinion.

Which rules apply to a user in a namespace (``rules_for``), as Kubernetes' rule resolver
finds them: every ClusterRoleBinding whose subjects name the user (by name, by one of its
groups, or as the ServiceAccount ``system:serviceaccount:<ns>:<name>``), and in the request's
namespace every RoleBinding likewise, granting its Role or — in that namespace only — its
ClusterRole. Users in a superuser group (``system:masters``) are allowed everything, as
kube-apiserver's privileged-groups authorizer does ahead of RBAC. A binding to a role that
does not exist grants nothing and is named in the reason, worded as upstream words it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...machinery.user import MASTERS, UserInfo
from ..authorizer import Authorization, Decision, RequestAttributes
from .index import Binding, RBACIndex, Subject, subject_key
from .rules import Rule, rule_allows

ROLE_NOT_FOUND = 'role.rbac.authorization.k8s.io "{}" not found'
CLUSTER_ROLE_NOT_FOUND = 'clusterrole.rbac.authorization.k8s.io "{}" not found'
_CACHE_SIZE = 4096


@dataclass(frozen=True)
class RuleSet:
    """The rules that apply to a user in a namespace, and what could not be resolved."""

    rules: tuple[Rule, ...]
    errors: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        if not self.errors:
            return ""
        if len(self.errors) == 1:
            return f"RBAC: {self.errors[0]}"
        return f"RBAC: [{', '.join(self.errors)}]"


def applies_to(subject: Subject, user: UserInfo, binding_namespace: str) -> bool:
    key = subject_key(subject, binding_namespace)
    if key is None:
        return False
    kind, name = key
    return name == user.name if kind == "User" else name in user.groups


class RBACAuthorizer:
    def __init__(self, index: RBACIndex, *, superuser_groups: Iterable[str] = (MASTERS,)) -> None:
        self.index = index
        self.superuser_groups = frozenset(superuser_groups)
        self._cache: dict[tuple[str, tuple[str, ...], str], tuple[int, RuleSet]] = {}

    async def authorize(self, attributes: RequestAttributes) -> Authorization:
        return self.decide(attributes)

    def decide(self, attributes: RequestAttributes) -> Authorization:
        user = attributes.user
        if not self.superuser_groups.isdisjoint(user.groups):
            return Authorization(Decision.ALLOW)
        found = self.rules_for(user, attributes.namespace)
        if any(rule_allows(attributes, rule) for rule in found.rules):
            return Authorization(Decision.ALLOW)
        return Authorization(Decision.NO_OPINION, found.reason)

    def rules_for(self, user: UserInfo, namespace: str) -> RuleSet:
        """Every rule bound to ``user`` cluster-wide and, if given, in ``namespace``."""
        key = (user.name, user.groups, namespace)
        cached = self._cache.get(key)
        if cached is not None and cached[0] == self.index.generation:
            return cached[1]
        found = self._resolve(user, namespace)
        if len(self._cache) >= _CACHE_SIZE:
            self._cache.clear()
        self._cache[key] = (self.index.generation, found)
        return found

    def _resolve(self, user: UserInfo, namespace: str) -> RuleSet:
        rules: list[Rule] = []
        errors: list[str] = []

        def grant(binding: Binding) -> None:
            if not any(applies_to(s, user, binding.namespace) for s in binding.subjects):
                return
            granted: tuple[Rule, ...] | None
            if binding.role_kind == "ClusterRole":
                granted = self.index.cluster_role_rules(binding.role_name)
                missing = CLUSTER_ROLE_NOT_FOUND
            elif binding.role_kind == "Role" and binding.namespace:
                granted = self.index.role_rules(binding.namespace, binding.role_name)
                missing = ROLE_NOT_FOUND
            else:
                return
            if granted is None:
                errors.append(missing.format(binding.role_name))
            else:
                rules.extend(granted)

        keys = [("User", user.name), *(("Group", g) for g in user.groups)]
        for binding in self.index.cluster_role_bindings(keys):
            grant(binding)
        if namespace:
            for binding in self.index.role_bindings(namespace, keys):
                grant(binding)
        return RuleSet(tuple(rules), tuple(errors))

"""The RBAC objects the authorizer decides on, kept in memory and fed object events.

The index never reads storage itself (it sits below the sources): the server feeds it every
Role, ClusterRole, RoleBinding and ClusterRoleBinding as they change (``upsert``/``delete``,
dispatched on the object's ``kind``). A ClusterRole with an ``aggregationRule`` has as its
rules the union of the rules of the other ClusterRoles its selectors match, computed here so
that a decision never waits for the aggregation controller to write them; the controller
writes the same rules into the stored object, for ``kubectl get -o yaml``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ...machinery.user import SERVICE_ACCOUNT_PREFIX
from ...toolkit import JSON
from .rules import Rule, rules_from_json, union


@dataclass(frozen=True)
class Subject:
    kind: str
    name: str
    namespace: str = ""


@dataclass(frozen=True)
class Binding:
    """A RoleBinding (namespace set) or ClusterRoleBinding, reduced to what decisions need."""

    name: str
    namespace: str
    role_kind: str
    role_name: str
    subjects: tuple[Subject, ...]

    @classmethod
    def from_json(cls, obj: JSON) -> Binding:
        meta = obj.get("metadata") or {}
        ref = obj.get("roleRef") or {}
        subjects = tuple(
            Subject(str(s.get("kind", "")), str(s.get("name", "")), str(s.get("namespace") or ""))
            for s in obj.get("subjects") or []
            if isinstance(s, dict)
        )
        return cls(
            str(meta.get("name", "")),
            str(meta.get("namespace") or ""),
            str(ref.get("kind", "")),
            str(ref.get("name", "")),
            subjects,
        )


@dataclass(frozen=True)
class ClusterRoleEntry:
    name: str
    labels: dict[str, str]
    rules: tuple[Rule, ...]
    selectors: tuple[Callable[[dict[str, str]], bool], ...] | None
    """The aggregation rule's selectors, or None for a role that is not aggregated."""


def selector_matcher(selector: Any) -> Callable[[dict[str, str]], bool]:
    """A ``metav1.LabelSelector`` as a predicate on labels (an empty one matches all)."""
    if not isinstance(selector, dict):
        return lambda _labels: False
    match_labels = dict(selector.get("matchLabels") or {})
    expressions = [e for e in selector.get("matchExpressions") or [] if isinstance(e, dict)]

    def matches(labels: dict[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in match_labels.items()):
            return False
        for expr in expressions:
            key, op, values = str(expr.get("key")), expr.get("operator"), expr.get("values") or []
            present = key in labels
            if op == "In" and not (present and labels[key] in values):
                return False
            if op == "NotIn" and present and labels[key] in values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
            if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
                return False
        return True

    return matches


SubjectKey = tuple[str, str]


def subject_key(subject: Subject, binding_namespace: str) -> SubjectKey | None:
    """Who a subject names, as a user name or a group: a ServiceAccount is the user
    ``system:serviceaccount:<ns>:<name>``, its namespace defaulting to the binding's."""
    if subject.kind == "ServiceAccount":
        namespace = subject.namespace or binding_namespace
        if not namespace:
            return None
        return ("User", f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{subject.name}")
    if subject.kind in ("User", "Group"):
        return (subject.kind, subject.name)
    return None


class BindingSet:
    """Bindings by name, and by the users and groups they name, so that finding a user's
    bindings costs what the user's groups cost, not what the number of bindings costs."""

    def __init__(self) -> None:
        self._by_name: dict[str, Binding] = {}
        self._by_subject: dict[SubjectKey, dict[str, Binding]] = {}

    def __len__(self) -> int:
        return len(self._by_name)

    def put(self, binding: Binding) -> None:
        self.remove(binding.name)
        self._by_name[binding.name] = binding
        for key in self._keys(binding):
            self._by_subject.setdefault(key, {})[binding.name] = binding

    def remove(self, name: str) -> None:
        old = self._by_name.pop(name, None)
        if old is None:
            return
        for key in self._keys(old):
            named = self._by_subject.get(key)
            if named is not None:
                named.pop(name, None)
                if not named:
                    del self._by_subject[key]

    def naming(self, keys: Iterable[SubjectKey]) -> list[Binding]:
        """The bindings naming any of ``keys``, each once, in name order."""
        found: dict[str, Binding] = {}
        for key in keys:
            found.update(self._by_subject.get(key) or {})
        return [found[name] for name in sorted(found)]

    def __iter__(self) -> Iterator[Binding]:
        return iter(self._by_name.values())

    @staticmethod
    def _keys(binding: Binding) -> set[SubjectKey]:
        keys = (subject_key(s, binding.namespace) for s in binding.subjects)
        return {k for k in keys if k is not None}


class RBACIndex:
    def __init__(self) -> None:
        self.generation = 0
        """Bumped on every change, so that derived caches know when they are stale."""
        self._roles: dict[tuple[str, str], tuple[Rule, ...]] = {}
        self._cluster_roles: dict[str, ClusterRoleEntry] = {}
        self._role_bindings: dict[str, BindingSet] = {}
        self._cluster_role_bindings = BindingSet()
        self._effective: dict[str, tuple[Rule, ...]] = {}

    # -- feeding ---------------------------------------------------------------------

    def upsert(self, obj: JSON) -> None:
        self._change(obj, present=True)

    def delete(self, obj: JSON) -> None:
        self._change(obj, present=False)

    def _change(self, obj: JSON, *, present: bool) -> None:
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        namespace = str(meta.get("namespace") or "")
        if kind == "Role":
            if present:
                self._roles[(namespace, name)] = rules_from_json(obj.get("rules"))
            else:
                self._roles.pop((namespace, name), None)
        elif kind == "ClusterRole":
            if present:
                self._cluster_roles[name] = _cluster_role(obj)
            else:
                self._cluster_roles.pop(name, None)
            self._effective = {}
        elif kind == "RoleBinding":
            bindings = self._role_bindings.setdefault(namespace, BindingSet())
            if present:
                bindings.put(Binding.from_json(obj))
            else:
                bindings.remove(name)
                if not bindings:
                    del self._role_bindings[namespace]
        elif kind == "ClusterRoleBinding":
            if present:
                self._cluster_role_bindings.put(Binding.from_json(obj))
            else:
                self._cluster_role_bindings.remove(name)
        else:
            return
        self.generation += 1

    # -- reading ---------------------------------------------------------------------

    def role_rules(self, namespace: str, name: str) -> tuple[Rule, ...] | None:
        return self._roles.get((namespace, name))

    def cluster_role_rules(self, name: str) -> tuple[Rule, ...] | None:
        """A ClusterRole's rules (aggregated ones computed), or None if there is no such role."""
        if name not in self._cluster_roles:
            return None
        return self._rules_of(name, frozenset())

    def aggregated_cluster_roles(self) -> list[str]:
        return sorted(n for n, e in self._cluster_roles.items() if e.selectors is not None)

    def cluster_role_bindings(self, keys: Iterable[SubjectKey]) -> list[Binding]:
        """The ClusterRoleBindings naming any of ``keys`` (see ``subject_key``)."""
        return self._cluster_role_bindings.naming(keys)

    def role_bindings(self, namespace: str, keys: Iterable[SubjectKey]) -> list[Binding]:
        """The RoleBindings of ``namespace`` naming any of ``keys``."""
        bindings = self._role_bindings.get(namespace)
        return bindings.naming(keys) if bindings is not None else []

    def _rules_of(self, name: str, visiting: frozenset[str]) -> tuple[Rule, ...]:
        cached = self._effective.get(name)
        if cached is not None:
            return cached
        entry = self._cluster_roles[name]
        if entry.selectors is None:
            return entry.rules
        # Aggregation as Kubernetes' controller does it: matching roles in name order, the
        # role itself excluded; roles that aggregate in turn contribute their own union.
        inside = visiting | {name}
        parts = [
            self._rules_of(other, inside)
            for other in sorted(self._cluster_roles)
            if other not in inside
            and any(match(self._cluster_roles[other].labels) for match in entry.selectors)
        ]
        rules = union(parts)
        if not visiting:
            self._effective[name] = rules
        return rules


def _cluster_role(obj: JSON) -> ClusterRoleEntry:
    meta = obj.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    aggregation = obj.get("aggregationRule")
    selectors = None
    if isinstance(aggregation, dict):
        selectors = tuple(
            selector_matcher(s) for s in aggregation.get("clusterRoleSelectors") or []
        )
    return ClusterRoleEntry(
        str(meta.get("name", "")), labels, rules_from_json(obj.get("rules")), selectors
    )

"""Privilege-escalation prevention: nobody grants, through a role or a binding, more than
they hold themselves, as Kubernetes' RBAC storage checks it.

A user may create or update a Role or ClusterRole only if it holds every permission in it
(or may ``escalate`` that role), and bind a role only if it holds every permission the role
grants (or may ``bind`` it); superusers may do both. Holding is decided rule by rule on the
broken-down form: each (verb, group, resource, name) or (verb, URL) of the new rules must be
covered by one of the user's rules, where ``*`` covers only what ``*`` means literally (a
rule for ``*`` verbs is not covered by a rule listing every verb).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ...api.rbac import RBAC_GROUP
from ...machinery import CREATE, UPDATE, AdmissionRequest, errors
from ...machinery.user import UserInfo
from ..authorizer import RequestAttributes
from .authorizer import RBACAuthorizer
from .rules import ALL, Rule, rules_from_json


def breakdown(rule: Rule) -> list[Rule]:
    """One rule per verb and group/resource/name, or per verb and URL."""
    simple: list[Rule] = []
    for verb in rule.verbs:
        for group in rule.api_groups:
            for resource in rule.resources:
                if rule.resource_names:
                    simple += [
                        Rule((verb,), (group,), (resource,), (name,))
                        for name in rule.resource_names
                    ]
                else:
                    simple.append(Rule((verb,), (group,), (resource,)))
        simple += [Rule((verb,), non_resource_urls=(url,)) for url in rule.non_resource_urls]
    return simple


def _has(values: Sequence[str], wanted: Sequence[str]) -> bool:
    return ALL in values or all(w in values for w in wanted)


def _resource_covered(owner: Sequence[str], wanted: str) -> bool:
    if ALL in owner or wanted in owner:
        return True
    _, slash, sub = wanted.partition("/")
    return bool(slash) and f"*/{sub}" in owner


def _url_covered(owner: Sequence[str], wanted: str) -> bool:
    for url in owner:
        if url in (ALL, wanted) or (url.endswith(ALL) and wanted.startswith(url[:-1])):
            return True
    return False


def rule_covers(owner: Rule, simple: Rule) -> bool:
    if not _has(owner.verbs, simple.verbs):
        return False
    if simple.non_resource_urls:
        return all(_url_covered(owner.non_resource_urls, u) for u in simple.non_resource_urls)
    return (
        _has(owner.api_groups, simple.api_groups)
        and all(_resource_covered(owner.resources, r) for r in simple.resources)
        and _names_covered(owner.resource_names, simple.resource_names)
    )


def _names_covered(owner: Sequence[str], wanted: Sequence[str]) -> bool:
    # A rule for every name is covered only by a rule for every name.
    if not owner:
        return True
    return bool(wanted) and all(n in owner for n in wanted)


def uncovered(owner: Iterable[Rule], wanted: Iterable[Rule]) -> list[Rule]:
    """The broken-down rules of ``wanted`` that no rule of ``owner`` covers."""
    held = list(owner)
    missing: list[Rule] = []
    for rule in wanted:
        for simple in breakdown(rule):
            if not any(rule_covers(o, simple) for o in held) and simple not in missing:
                missing.append(simple)
    return missing


def describe(rule: Rule) -> str:
    """A rule as upstream prints it in the escalation message."""
    parts = []
    for label, values in (
        ("APIGroups", rule.api_groups),
        ("Resources", rule.resources),
        ("ResourceNames", rule.resource_names),
        ("NonResourceURLs", rule.non_resource_urls),
        ("Verbs", rule.verbs),
    ):
        if values:
            quoted = " ".join(f'"{v}"' for v in values)
            parts.append(f"{label}:[{quoted}]")
    return "{" + ", ".join(parts) + "}"


FULL_AUTHORITY = (Rule(("*",), ("*",), ("*",)), Rule(("*",), non_resource_urls=("*",)))
_PLURALS = {
    "Role": "roles",
    "ClusterRole": "clusterroles",
    "RoleBinding": "rolebindings",
    "ClusterRoleBinding": "clusterrolebindings",
}


class EscalationGuard:
    """Refuses a write of an RBAC object that grants more than the writer holds (an
    admission plugin).

    ``check`` is called with a valid object about to be stored and who writes it; it
    raises a 403 ``StatusError`` worded as kube-apiserver words it. In-process writes (no
    user name: the bootstrap policy, the aggregation controller) are never refused.
    """

    def __init__(self, authorizer: RBACAuthorizer) -> None:
        self.authorizer = authorizer

    async def admit(self, request: AdmissionRequest) -> None:
        """The admission plugin: every create and update of an RBAC object."""
        if (
            request.operation in (CREATE, UPDATE)
            and request.obj is not None
            and request.resource.group == RBAC_GROUP
            and not request.subresource
        ):
            await self.check(request.obj, request.user)

    async def check(self, obj: dict[str, Any], user: UserInfo) -> None:
        kind = str(obj.get("kind", ""))
        if kind not in _PLURALS or not user.name:
            return
        if not self.authorizer.superuser_groups.isdisjoint(user.groups):
            return
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        namespace = str(meta.get("namespace") or "") if kind.startswith("Role") else ""
        held = self.authorizer.rules_for(user, namespace)
        if kind in ("Role", "ClusterRole"):
            if await self._may(user, "escalate", _PLURALS[kind], name, namespace):
                return
            if kind == "ClusterRole" and obj.get("aggregationRule") is not None:
                if uncovered(held.rules, FULL_AUTHORITY):
                    raise _forbidden(
                        kind,
                        name,
                        "must have cluster-admin privileges to write aggregated clusterroles",
                    )
                return
            wanted = rules_from_json(obj.get("rules"))
        else:
            ref = obj.get("roleRef") or {}
            ref_kind, ref_name = str(ref.get("kind", "")), str(ref.get("name", ""))
            if await self._may(user, "bind", _PLURALS.get(ref_kind, ""), ref_name, namespace):
                return
            granted = (
                self.authorizer.index.role_rules(namespace, ref_name)
                if ref_kind == "Role"
                else self.authorizer.index.cluster_role_rules(ref_name)
            )
            if granted is None:
                raise _forbidden(
                    kind, name, f'{ref_kind.lower()}.{RBAC_GROUP} "{ref_name}" not found'
                )
            wanted = granted
        missing = uncovered(held.rules, wanted)
        if missing:
            groups = " ".join(f'"{g}"' for g in user.groups)
            message = (
                f'user "{user.name}" (groups=[{groups}]) is attempting to grant RBAC permissions'
                " not currently held:\n" + "\n".join(describe(m) for m in missing)
            )
            if held.errors:
                message += f"; resolution errors: [{', '.join(held.errors)}]"
            raise _forbidden(kind, name, message)

    async def _may(
        self, user: UserInfo, verb: str, resource: str, name: str, namespace: str
    ) -> bool:
        decision = await self.authorizer.authorize(
            RequestAttributes(
                user=user,
                verb=verb,
                resource_request=True,
                namespace=namespace,
                api_group=RBAC_GROUP,
                api_version="v1",
                resource=resource,
                name=name,
            )
        )
        return decision.allowed


def _forbidden(kind: str, name: str, message: str) -> errors.StatusError:
    plural = _PLURALS[kind]
    return errors.StatusError(
        403,
        "Forbidden",
        f'{plural}.{RBAC_GROUP} "{name}" is forbidden: {message}',
        details={"name": name, "group": RBAC_GROUP, "kind": plural},
    )

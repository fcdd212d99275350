"""One policy rule and whether it allows a request, with Kubernetes' matching semantics.

* verbs, apiGroups: ``*`` or an exact match;
* resources: ``*``, the exact ``resource`` or ``resource/subresource``, or ``*/sub`` for that
  subresource of every resource (a rule's ``pods`` does not cover ``pods/status``);
* resourceNames: empty allows every name; otherwise the request must name one of them, so
  a list, watch or create without a name is not allowed by such a rule;
* nonResourceURLs: ``*``, an exact path, or a prefix ending in ``*``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..authorizer import RequestAttributes

ALL = "*"


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, str))


@dataclass(frozen=True)
class Rule:
    """A PolicyRule, read once from its JSON form."""

    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, rule: dict[str, Any]) -> Rule:
        return cls(
            _strings(rule.get("verbs")),
            _strings(rule.get("apiGroups")),
            _strings(rule.get("resources")),
            _strings(rule.get("resourceNames")),
            _strings(rule.get("nonResourceURLs")),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verbs": list(self.verbs)}
        if self.api_groups:
            out["apiGroups"] = list(self.api_groups)
        if self.resources:
            out["resources"] = list(self.resources)
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        if self.non_resource_urls:
            out["nonResourceURLs"] = list(self.non_resource_urls)
        return out


def rules_from_json(rules: Any) -> tuple[Rule, ...]:
    if not isinstance(rules, list):
        return ()
    return tuple(Rule.from_json(r) for r in rules if isinstance(r, dict))


def verb_matches(rule: Rule, verb: str) -> bool:
    return ALL in rule.verbs or verb in rule.verbs


def api_group_matches(rule: Rule, group: str) -> bool:
    return ALL in rule.api_groups or group in rule.api_groups


def resource_matches(rule: Rule, resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for candidate in rule.resources:
        if candidate in (ALL, combined):
            return True
        if subresource and candidate == f"*/{subresource}":
            return True
    return False


def resource_name_matches(rule: Rule, name: str) -> bool:
    return not rule.resource_names or name in rule.resource_names


def non_resource_url_matches(rule: Rule, path: str) -> bool:
    for candidate in rule.non_resource_urls:
        if candidate in (ALL, path):
            return True
        if candidate.endswith(ALL) and path.startswith(candidate[:-1]):
            return True
    return False


def rule_allows(attributes: RequestAttributes, rule: Rule) -> bool:
    if not verb_matches(rule, attributes.verb):
        return False
    if attributes.resource_request:
        return (
            api_group_matches(rule, attributes.api_group)
            and resource_matches(rule, attributes.resource, attributes.subresource)
            and resource_name_matches(rule, attributes.name)
        )
    return non_resource_url_matches(rule, attributes.path)


def union(rule_sets: Iterable[Iterable[Rule]]) -> tuple[Rule, ...]:
    """Every distinct rule, first occurrence first (how aggregation merges roles)."""
    seen: dict[Rule, None] = {}
    for rules in rule_sets:
        for rule in rules:
            seen.setdefault(rule, None)
    return tuple(seen)

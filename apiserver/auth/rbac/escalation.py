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

from .rules import ALL, Rule


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

"""Validation of RBAC objects, following the rules kube-apiserver applies to them."""

from __future__ import annotations

from .. import field
from ..field import FieldError, Path
from ..names import dns1123_subdomain_errors, label_value_errors, qualified_name_errors
from .group import RBAC_GROUP
from .types import (
    ClusterRole,
    ClusterRoleBinding,
    LabelSelector,
    PolicyRule,
    Role,
    RoleBinding,
    RoleRef,
    Subject,
)

SUBJECT_KINDS = ("ServiceAccount", "User", "Group")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def path_segment_name_errors(name: str) -> list[str]:
    """RBAC names are path segments: anything but ``.``, ``..`` and names with ``/`` or ``%``."""
    if name in (".", ".."):
        return [f'may not be "{name}"']
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def validate_policy_rule(rule: PolicyRule, *, namespaced: bool, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if not rule.verbs:
        errs.append(
            field.required(str(path.child("verbs")), "verbs must contain at least one value")
        )
    if rule.non_resource_urls:
        if namespaced:
            errs.append(
                field.invalid(
                    str(path.child("nonResourceURLs")),
                    rule.non_resource_urls,
                    "namespaced rules cannot apply to non-resource URLs",
                )
            )
        if rule.api_groups or rule.resources or rule.resource_names:
            errs.append(
                field.invalid(
                    str(path.child("nonResourceURLs")),
                    rule.non_resource_urls,
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            )
        return errs
    if not rule.api_groups:
        errs.append(
            field.required(
                str(path.child("apiGroups")), "resource rules must supply at least one api group"
            )
        )
    if not rule.resources:
        errs.append(
            field.required(
                str(path.child("resources")), "resource rules must supply at least one resource"
            )
        )
    return errs


def _validate_rules(rules: list[PolicyRule] | None, *, namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(rules or []):
        errs += validate_policy_rule(rule, namespaced=namespaced, path=Path("rules").index(i))
    return errs


def validate_label_selector(selector: LabelSelector, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for key, value in (selector.match_labels or {}).items():
        errs += field.invalid_each(path.child("matchLabels"), key, qualified_name_errors(key))
        errs += field.invalid_each(path.child("matchLabels"), value, label_value_errors(value))
    for i, req in enumerate(selector.match_expressions or []):
        at = path.child("matchExpressions").index(i)
        errs += field.invalid_each(at.child("key"), req.key, qualified_name_errors(req.key))
        if req.operator not in SELECTOR_OPERATORS:
            errs.append(
                field.not_supported(
                    str(at.child("operator")), req.operator, list(SELECTOR_OPERATORS)
                )
            )
        elif req.operator in ("In", "NotIn") and not req.values:
            errs.append(
                field.required(
                    str(at.child("values")), "must be specified when `operator` is 'In' or 'NotIn'"
                )
            )
        elif req.operator in ("Exists", "DoesNotExist") and req.values:
            errs.append(
                field.forbidden(
                    str(at.child("values")),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    return errs


def validate_role(role: Role) -> list[FieldError]:
    return _validate_rules(role.rules, namespaced=True)


def validate_cluster_role(role: ClusterRole) -> list[FieldError]:
    errs = _validate_rules(role.rules, namespaced=False)
    if role.aggregation_rule is not None:
        at = Path("aggregationRule").child("clusterRoleSelectors")
        selectors = role.aggregation_rule.cluster_role_selectors or []
        if not selectors:
            errs.append(
                field.required(
                    str(at),
                    "at least one clusterRoleSelector required if aggregationRule is non-nil",
                )
            )
        for i, selector in enumerate(selectors):
            errs += validate_label_selector(selector, at.index(i))
    return errs


def _validate_role_ref(ref: RoleRef, kinds: tuple[str, ...]) -> list[FieldError]:
    at = Path("roleRef")
    errs: list[FieldError] = []
    if ref.api_group != RBAC_GROUP:
        errs.append(field.not_supported(str(at.child("apiGroup")), ref.api_group, [RBAC_GROUP]))
    if ref.kind not in kinds:
        errs.append(field.not_supported(str(at.child("kind")), ref.kind, list(kinds)))
    errs += field.required_name(at.child("name"), ref.name, path_segment_name_errors)
    return errs


def validate_subject(subject: Subject, *, namespaced: bool, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if not subject.name:
        errs.append(field.required(str(path.child("name")), ""))
    group = subject.api_group or ""
    if subject.kind == "ServiceAccount":
        if group != "":
            errs.append(field.not_supported(str(path.child("apiGroup")), group, [""]))
        if subject.name:
            errs += field.invalid_each(
                path.child("name"), subject.name, dns1123_subdomain_errors(subject.name)
            )
        if not subject.namespace and not namespaced:
            errs.append(field.required(str(path.child("namespace")), ""))
    elif subject.kind in ("User", "Group"):
        if group != RBAC_GROUP:
            errs.append(field.not_supported(str(path.child("apiGroup")), group, [RBAC_GROUP]))
    else:
        errs.append(field.not_supported(str(path.child("kind")), subject.kind, list(SUBJECT_KINDS)))
    return errs


def _validate_subjects(subjects: list[Subject] | None, *, namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, subject in enumerate(subjects or []):
        errs += validate_subject(subject, namespaced=namespaced, path=Path("subjects").index(i))
    return errs


def validate_role_binding(binding: RoleBinding) -> list[FieldError]:
    return _validate_role_ref(binding.role_ref, ("Role", "ClusterRole")) + _validate_subjects(
        binding.subjects, namespaced=True
    )


def validate_cluster_role_binding(binding: ClusterRoleBinding) -> list[FieldError]:
    return _validate_role_ref(binding.role_ref, ("ClusterRole",)) + _validate_subjects(
        binding.subjects, namespaced=False
    )


def validate_role_ref_unchanged(new: RoleRef, old: RoleRef) -> list[FieldError]:
    if new != old:
        return [field.invalid("roleRef", new.model_dump(by_alias=True), "cannot change roleRef")]
    return []

"""Validation of object metadata and of conditions, shared by every kind."""

from __future__ import annotations

import re
from collections.abc import Iterable

from . import field
from .field import FieldError, Path
from .meta import Condition, ObjectMeta
from .names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
CONDITION_TYPE_MAX = 316
CONDITION_REASON_MAX = 1024
CONDITION_MESSAGE_MAX = 32 * 1024
_CONDITION_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


def validate_object_meta(
    meta: ObjectMeta,
    *,
    namespaced: bool,
    name_errors: field.NameRule = dns1123_subdomain_errors,
    path: Path | None = None,
) -> list[FieldError]:
    path = path or Path("metadata")
    errs = field.required_name(
        path.child("name"), meta.name, name_errors, "name or generateName is required"
    )
    if namespaced:
        errs += field.required_name(path.child("namespace"), meta.namespace, dns1123_label_errors)
    elif meta.namespace:
        errs.append(field.forbidden(str(path.child("namespace")), "not allowed on this type"))
    if meta.generation is not None and meta.generation < 0:
        errs.append(
            field.invalid(
                str(path.child("generation")), meta.generation, "must be greater than or equal to 0"
            )
        )
    errs += validate_labels(meta.labels or {}, path.child("labels"))
    errs += validate_annotations(meta.annotations or {}, path.child("annotations"))
    errs += _validate_finalizers(meta.finalizers or [], path.child("finalizers"))
    for i, ref in enumerate(meta.owner_references or []):
        ref_path = path.child("ownerReferences").index(i)
        for name in ("api_version", "kind", "name", "uid"):
            if not getattr(ref, name):
                json_name = "apiVersion" if name == "api_version" else name
                errs.append(field.required(str(ref_path.child(json_name))))
    return errs


def validate_labels(labels: dict[str, str], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for key, value in labels.items():
        errs += field.invalid_each(path, key, qualified_name_errors(key))
        errs += field.invalid_each(path.key(key), value, label_value_errors(value))
    return errs


def validate_annotations(annotations: dict[str, str], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    total = 0
    for key, value in annotations.items():
        errs += field.invalid_each(path, key, qualified_name_errors(key.lower()))
        total += len(key) + len(value)
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(field.too_long(str(path), TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def _validate_finalizers(finalizers: Iterable[str], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, name in enumerate(finalizers):
        errs += field.invalid_each(path.index(i), name, qualified_name_errors(name))
    return errs


def validate_conditions(conditions: list[Condition], path: Path) -> list[FieldError]:
    """Rules of ``metav1validation.ValidateConditions``: unique types, well-formed reasons."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, cond in enumerate(conditions):
        p = path.index(i)
        if cond.type in seen:
            errs.append(field.duplicate(str(p.child("type")), cond.type))
        seen.add(cond.type)
        errs += field.required_name(
            p.child("type"), cond.type, qualified_name_errors, max_length=CONDITION_TYPE_MAX
        )
        if not cond.reason:
            errs.append(field.required(str(p.child("reason"))))
        elif len(cond.reason) > CONDITION_REASON_MAX:
            errs.append(field.too_long(str(p.child("reason")), CONDITION_REASON_MAX))
        elif not _CONDITION_REASON.match(cond.reason):
            errs.append(
                field.invalid(
                    str(p.child("reason")),
                    cond.reason,
                    "a condition reason must start with alphabetic character, optionally followed"
                    " by a string of alphanumeric characters or '_,:', and must end with an"
                    " alphanumeric character or '_'",
                )
            )
        if len(cond.message) > CONDITION_MESSAGE_MAX:
            errs.append(field.too_long(str(p.child("message")), CONDITION_MESSAGE_MAX))
        if cond.observed_generation is not None and cond.observed_generation < 0:
            errs.append(
                field.invalid(
                    str(p.child("observedGeneration")),
                    cond.observed_generation,
                    "must be greater than or equal to zero",
                )
            )
    return errs

"""Validation of core ``v1`` Namespaces (the name, a DNS label, is checked with the metadata)."""

from __future__ import annotations

from ... import field
from ...field import FieldError, Path
from ...names import qualified_name_errors
from ..namespace import Namespace

FINALIZERS = Path("spec").child("finalizers")


def validate_namespace(namespace: Namespace) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, name in enumerate((namespace.spec.finalizers if namespace.spec else None) or []):
        errs += field.invalid_each(FINALIZERS.index(i), name, qualified_name_errors(name))
    return errs


def validate_namespace_status(namespace: Namespace) -> list[FieldError]:
    conditions = (namespace.status.conditions if namespace.status else None) or []
    path = Path("status").child("conditions")
    return [
        field.required(str(path.index(i).child("type")))
        for i, c in enumerate(conditions)
        if not c.type
    ]

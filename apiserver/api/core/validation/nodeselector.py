"""Validation of the core ``v1`` NodeSelector, as kube-apiserver checks it in DRA objects."""

from __future__ import annotations

import re

from ... import field
from ...field import FieldError, Path
from ...names import dns1123_subdomain_errors, qualified_name_errors
from ..nodeselector import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm

NODE_NAME_FIELD = "metadata.name"
_INTEGER = re.compile(r"^[+-]?\d+$")


def validate_node_name(name: str, path: Path) -> list[FieldError]:
    """A node name is a DNS subdomain."""
    return field.required_name(path, name, dns1123_subdomain_errors)


def validate_node_selector(
    selector: NodeSelector, path: Path, *, exactly_one_term: bool = False
) -> list[FieldError]:
    """At least one term (exactly one where DRA asks for it), each requirement well formed."""
    terms = selector.node_selector_terms
    tpath = path.child("nodeSelectorTerms")
    errs: list[FieldError] = []
    if not terms:
        errs.append(field.required(str(tpath), "must have at least one node selector term"))
    elif exactly_one_term and len(terms) != 1:
        errs.append(
            field.invalid(str(tpath), len(terms), "must have exactly one node selector term")
        )
    for i, term in enumerate(terms):
        errs += _validate_term(term, tpath.index(i))
    return errs


def _validate_term(term: NodeSelectorTerm, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, req in enumerate(term.match_expressions or []):
        errs += _validate_label_requirement(req, path.child("matchExpressions").index(j))
    for j, req in enumerate(term.match_fields or []):
        errs += _validate_field_requirement(req, path.child("matchFields").index(j))
    return errs


def _validate_label_requirement(req: NodeSelectorRequirement, path: Path) -> list[FieldError]:
    errs = field.invalid_each(path.child("key"), req.key, qualified_name_errors(req.key))
    values = req.values or []
    vpath = str(path.child("values"))
    if req.operator in ("In", "NotIn"):
        if not values:
            errs.append(
                field.required(vpath, "must be specified when `operator` is 'In' or 'NotIn'")
            )
    elif req.operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(
                field.forbidden(
                    vpath, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                )
            )
    elif len(values) != 1:
        errs.append(
            field.required(vpath, "must be specified single value when `operator` is 'Lt' or 'Gt'")
        )
    elif not _INTEGER.match(values[0]):
        errs.append(
            field.invalid(str(path.child("values").index(0)), values[0], "must be an integer")
        )
    return errs


def _validate_field_requirement(req: NodeSelectorRequirement, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if req.key != NODE_NAME_FIELD:
        errs.append(field.not_supported(str(path.child("key")), req.key, [NODE_NAME_FIELD]))
    if req.operator not in ("In", "NotIn"):
        errs.append(field.not_supported(str(path.child("operator")), req.operator, ["In", "NotIn"]))
    values = req.values or []
    if len(values) != 1:
        errs.append(
            field.required(
                str(path.child("values")),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )
        )
    elif req.key == NODE_NAME_FIELD:
        errs += validate_node_name(values[0], path.child("values").index(0))
    return errs

"""Validation of core ``v1`` Nodes, following the rules kube-apiserver applies to them.

Spec: taints have a label-name key, a label-value value, and are unique by key and effect;
``podCIDRs`` are CIDRs, at most two and one per IP family, ``podCIDR`` is the first of them;
once set, ``podCIDR(s)`` and ``providerID`` do not change. Status: capacity and allocatable
are named like resources and never negative; condition and address types are required.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from ....cel import quantity
from ... import field
from ...field import ErrorType, FieldError, Path
from ...names import label_value_errors, qualified_name_errors
from ..node import Node, NodeSpec, NodeStatus, Taint

MAX_POD_CIDRS = 2

SPEC = Path("spec")
STATUS = Path("status")


def validate_node(node: Node, old: Node | None = None) -> list[FieldError]:
    """Validate a new node, or an update of ``old`` (identifiers that are set stay set)."""
    spec = node.spec or NodeSpec()
    errs = validate_node_taints(spec.taints or [], SPEC.child("taints"))
    errs += _validate_pod_cidrs(spec)
    if old is not None:
        errs += _validate_unchanged_identifiers(spec, old.spec or NodeSpec())
    return errs


def validate_node_taints(taints: list[Taint], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        tpath = path.index(i)
        errs += field.required_name(tpath.child("key"), taint.key, qualified_name_errors)
        errs += field.invalid_each(
            tpath.child("value"), taint.value, label_value_errors(taint.value or "")
        )
        if (taint.key, taint.effect) in seen:
            errs.append(
                FieldError(
                    ErrorType.DUPLICATE,
                    str(tpath),
                    "taints must be unique by key and effect pair",
                    {"key": taint.key, "effect": taint.effect},
                )
            )
        seen.add((taint.key, taint.effect))
    return errs


def _validate_pod_cidrs(spec: NodeSpec) -> list[FieldError]:
    errs: list[FieldError] = []
    cidrs = spec.pod_cidrs or []
    path = SPEC.child("podCIDRs")
    if len(cidrs) > MAX_POD_CIDRS:
        errs.append(field.too_many(str(path), len(cidrs), MAX_POD_CIDRS))
    families: set[int] = set()
    for i, text in enumerate(cidrs):
        try:
            network = ipaddress.ip_network(text, strict=False)
        except ValueError:
            errs.append(field.invalid(str(path.index(i)), text, "must be a valid CIDR"))
            continue
        if network.version in families:
            errs.append(
                field.invalid(
                    str(path), cidrs, "may specify no more than one CIDR for each IP family"
                )
            )
        families.add(network.version)
    if spec.pod_cidr is not None:
        if cidrs and spec.pod_cidr != cidrs[0]:
            errs.append(
                field.invalid(str(SPEC.child("podCIDR")), spec.pod_cidr, "must equal podCIDRs[0]")
            )
        elif not cidrs:
            try:
                ipaddress.ip_network(spec.pod_cidr, strict=False)
            except ValueError:
                errs.append(
                    field.invalid(str(SPEC.child("podCIDR")), spec.pod_cidr, "must be a valid CIDR")
                )
    return errs


def _validate_unchanged_identifiers(spec: NodeSpec, old: NodeSpec) -> list[FieldError]:
    errs: list[FieldError] = []
    if old.pod_cidrs and spec.pod_cidrs != old.pod_cidrs:
        errs.append(
            field.forbidden(
                str(SPEC.child("podCIDRs")),
                'node updates may not change podCIDR except from "" to valid',
            )
        )
    if old.provider_id and spec.provider_id != old.provider_id:
        errs.append(
            field.forbidden(
                str(SPEC.child("providerID")),
                'node updates may not change providerID except from "" to valid',
            )
        )
    return errs


def validate_node_status(node: Node) -> list[FieldError]:
    status = node.status or NodeStatus()
    errs = _validate_resources(status.capacity or {}, STATUS.child("capacity"))
    errs += _validate_resources(status.allocatable or {}, STATUS.child("allocatable"))
    for i, condition in enumerate(status.conditions or []):
        if not condition.type:
            errs.append(field.required(str(STATUS.child("conditions").index(i).child("type"))))
    for i, address in enumerate(status.addresses or []):
        apath = STATUS.child("addresses").index(i)
        if not address.type:
            errs.append(field.required(str(apath.child("type"))))
        if not address.address:
            errs.append(field.required(str(apath.child("address"))))
    return errs


def _validate_resources(resources: Mapping[str, str | int | float], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for name, value in resources.items():
        rpath = str(path.key(name))
        errs += field.invalid_each(rpath, name, qualified_name_errors(name))
        amount = (
            quantity.from_int(value)
            if isinstance(value, int)
            else quantity.parse(value if isinstance(value, str) else repr(value))
        )
        if amount.nanos < 0:
            errs.append(field.invalid(rpath, value, "must be greater than or equal to 0"))
    return errs

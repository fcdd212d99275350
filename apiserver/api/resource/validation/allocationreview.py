"""Validation of an AllocationReview: pure functions returning field errors.

Every claim names a stored claim (namespace and name) or carries an inline spec, validated
as a ResourceClaim's spec is on create; at most 32 claims; candidate node names are DNS
subdomains, each once; ``reservationSeconds`` between 1 and 600; ``answer`` one of
``Allocations`` and ``Scores``, and not ``Scores`` with ``reserve``; ``knownStateVersion``
at most 64 characters, and not with ``reserve``.
"""

from __future__ import annotations

from ... import field
from ...field import FieldError, Path
from ...names import all_dns1123_subdomains, dns1123_label_errors, dns1123_subdomain_errors
from ..allocationreview import (
    ANSWER_SCORES,
    ANSWERS,
    CLAIMS_MAX,
    NODES_MAX,
    RESERVATION_SECONDS_MAX,
    STATE_VERSION_MAX,
    AllocationReview,
)
from .resourceclaim import validate_claim_spec


def validate_allocation_review(review: AllocationReview) -> list[FieldError]:
    spec = review.spec
    path = Path("spec")
    claims = path.child("claims")
    errs: list[FieldError] = []
    if not spec.claims:
        errs.append(field.required(str(claims), "at least one claim is required"))
    if len(spec.claims) > CLAIMS_MAX:
        errs.append(field.too_many(str(claims), len(spec.claims), CLAIMS_MAX))
    stored: set[tuple[str, str]] = set()
    for i, ref in enumerate(spec.claims):
        at = claims.index(i)
        if ref.spec is not None:
            errs += validate_claim_spec(ref.spec, at.child("spec"))
            if ref.name:
                errs += field.invalid_each(
                    at.child("name"), ref.name, dns1123_subdomain_errors(ref.name)
                )
            continue
        errs += field.required_name(
            at.child("namespace"), ref.namespace, dns1123_label_errors, "a stored claim needs one"
        )
        errs += field.required_name(
            at.child("name"),
            ref.name,
            dns1123_subdomain_errors,
            "name a stored claim or give a spec",
        )
        key = (ref.namespace or "", ref.name or "")
        if ref.namespace and ref.name and key in stored:
            errs.append(field.duplicate(str(at), f"{key[0]}/{key[1]}"))
        stored.add(key)
    nodes = path.child("nodeNames")
    names = spec.node_names or []
    if len(names) > NODES_MAX:
        errs.append(field.too_many(str(nodes), len(names), NODES_MAX))
    if len(set(names)) == len(names) and all_dns1123_subdomains(names):
        return errs + _answer_errors(review, path)  # the usual case, checked in one pass
    seen: set[str] = set()
    for i, name in enumerate(names):
        problems = dns1123_subdomain_errors(name)
        if problems or name in seen:  # the path only for an error: up to 5,000 names
            entry = str(nodes.index(i))
            errs += field.invalid_each(entry, name, problems)
            if name in seen:
                errs.append(field.duplicate(entry, name))
        seen.add(name)
    return errs + _answer_errors(review, path)


def _answer_errors(review: AllocationReview, path: Path) -> list[FieldError]:
    """The errors of what shapes the answer: the reservation's length, the answer mode and
    the state version held."""
    spec = review.spec
    errs = field.in_range(
        path.child("reservationSeconds"), spec.reservation_seconds, 1, RESERVATION_SECONDS_MAX
    )
    answer = path.child("answer")
    if spec.answer is not None and spec.answer not in ANSWERS:
        errs.append(field.not_supported(str(answer), spec.answer, list(ANSWERS)))
    elif spec.answer == ANSWER_SCORES and spec.reserve:
        errs.append(field.forbidden(str(answer), "a reserving review answers with its allocations"))
    known = path.child("knownStateVersion")
    if spec.known_state_version is not None:
        if spec.reserve:
            errs.append(field.forbidden(str(known), "a reserving review always searches"))
        elif len(spec.known_state_version) > STATE_VERSION_MAX:
            errs.append(field.too_long(str(known), STATE_VERSION_MAX))
    return errs

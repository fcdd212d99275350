"""Validation of core ``v1`` Pods, for the fields this server types (see ``api.core.pod``):
at least one container; container names DNS labels unique in the pod; resource claims named
by DNS labels, each naming a claim or a template (exactly one), and containers using only
claims the pod lists; ``nodeName`` a DNS subdomain that, once set, does not change."""

from __future__ import annotations

from ... import field
from ...field import FieldError, Path
from ...names import dns1123_label_errors, dns1123_subdomain_errors
from ..pod import Container, Pod

SPEC = Path("spec")


def validate_pod(pod: Pod, old: Pod | None = None) -> list[FieldError]:
    spec = pod.spec
    errs: list[FieldError] = []
    if not spec.containers:
        errs.append(field.required(str(SPEC.child("containers")), "at least one container"))
    claims = {c.name for c in spec.resource_claims or []}
    seen: set[str] = set()
    for list_name, containers in (
        ("initContainers", spec.init_containers or []),
        ("containers", spec.containers),
    ):
        for i, container in enumerate(containers):
            cpath = SPEC.child(list_name).index(i)
            errs += _validate_container(container, cpath, claims)
            if container.name in seen:
                errs.append(field.duplicate(str(cpath.child("name")), container.name))
            seen.add(container.name)
    names: set[str] = set()
    for i, claim in enumerate(spec.resource_claims or []):
        rpath = SPEC.child("resourceClaims").index(i)
        errs += field.invalid_each(
            rpath.child("name"), claim.name, dns1123_label_errors(claim.name)
        )
        if claim.name in names:
            errs.append(field.duplicate(str(rpath.child("name")), claim.name))
        names.add(claim.name)
        given = [n for n in (claim.resource_claim_name, claim.resource_claim_template_name) if n]
        if len(given) != 1:
            errs.append(
                field.invalid(
                    str(rpath),
                    claim.name,
                    "must specify exactly one of resourceClaimName and resourceClaimTemplateName",
                )
            )
    if spec.node_name:
        errs += field.invalid_each(
            SPEC.child("nodeName"), spec.node_name, dns1123_subdomain_errors(spec.node_name)
        )
    if old is not None and old.spec.node_name and spec.node_name != old.spec.node_name:
        errs.append(
            field.forbidden(str(SPEC.child("nodeName")), "a bound pod cannot move to another node")
        )
    return errs


def _validate_container(container: Container, path: Path, claims: set[str]) -> list[FieldError]:
    errs = field.invalid_each(
        path.child("name"), container.name, dns1123_label_errors(container.name)
    )
    used = (container.resources.claims if container.resources else None) or []
    for j, ref in enumerate(used):
        if ref.name not in claims:
            errs.append(
                field.invalid(
                    str(path.child("resources").child("claims").index(j).child("name")),
                    ref.name,
                    "must be the name of one of spec.resourceClaims",
                )
            )
    return errs

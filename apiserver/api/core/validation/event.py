"""Validation of core ``v1`` Events, following the rules kube-apiserver applies to them."""

from __future__ import annotations

from ... import field
from ...field import FieldError, Path
from ..event import Event

EVENT_TYPES = ("Normal", "Warning")
REASON_MAX = 128
ACTION_MAX = 128


def validate_event(event: Event) -> list[FieldError]:
    errs: list[FieldError] = []
    involved = event.involved_object
    namespace = event.metadata.namespace or ""
    path = Path("involvedObject").child("namespace")
    if involved.namespace:
        if involved.namespace != namespace:
            errs.append(
                field.invalid(str(path), involved.namespace, "does not match event.namespace")
            )
    elif namespace not in ("", "default"):
        # An event about a cluster-scoped object lives in "default", as in Kubernetes.
        errs.append(
            field.invalid(str(path), involved.namespace or "", "does not match event.namespace")
        )
    if event.type is not None and event.type not in EVENT_TYPES:
        errs.append(field.not_supported("type", event.type, list(EVENT_TYPES)))
    if event.reason is not None and len(event.reason) > REASON_MAX:
        errs.append(field.too_long("reason", REASON_MAX))
    if event.action is not None and len(event.action) > ACTION_MAX:
        errs.append(field.too_long("action", ACTION_MAX))
    errs += field.at_least("count", event.count, 0)
    return errs

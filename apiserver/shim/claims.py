"""The ResourceClaims a pod uses: named in ``spec.resourceClaims`` or, for claims made from
a template, found in ``status.resourceClaimStatuses`` once they exist."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PodClaims:
    names: list[str] = field(default_factory=list)
    """The claims' names, in the pod's namespace, in the pod's order, each once."""
    pending: list[str] = field(default_factory=list)
    """Entries of ``spec.resourceClaims`` whose claim from a template is not made yet."""


def pod_claims(pod: dict[str, Any]) -> PodClaims:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    generated = {
        s.get("name"): s.get("resourceClaimName")
        for s in status.get("resourceClaimStatuses") or []
        if isinstance(s, dict)
    }
    found = PodClaims()
    for entry in spec.get("resourceClaims") or []:
        if not isinstance(entry, dict):
            continue
        name = entry.get("resourceClaimName")
        if not name and entry.get("resourceClaimTemplateName"):
            name = generated.get(entry.get("name"))
            if not name:
                found.pending.append(str(entry.get("name")))
                continue
        if name and name not in found.names:
            found.names.append(name)
    return found


def pod_namespace(pod: dict[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("namespace") or "default")

"""Admin access admission (standalone mode): who may ask for ``adminAccess``.

As kube-apiserver's ResourceClaim and ResourceClaimTemplate strategies do (KEP-5018), a
claim or template whose requests ask for admin access may be created only in a namespace
labelled ``resource.kubernetes.io/admin-access: "true"`` (exactly that value): creating in
such a namespace is what grants the right, so a user without admin rights there cannot
reach devices other claims use. Only creates are checked; the spec is immutable after.
The refusal is a 422 naming the first request's ``adminAccess`` field, as upstream's.

Like the namespace lifecycle plugin it reads the Namespaces through the cluster's own
Namespace registry, told after construction (``NamespaceReader``).
"""

from __future__ import annotations

from typing import Any

from ..api import field
from ..machinery import CREATE, AdmissionRequest, errors
from .namespace import NamespaceReader, NamespaceStrategy
from .resourceclaim import ResourceClaimStrategy
from .resourceclaimtemplate import ResourceClaimTemplateStrategy

ADMIN_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"

NAMESPACES = NamespaceStrategy.core().resource
CLAIMS = ResourceClaimStrategy.upstream().resource
TEMPLATES = ResourceClaimTemplateStrategy.upstream().resource


def admin_access_field(spec: Any, prefix: str) -> str | None:
    """The path of the first request that asks for admin access in a claim ``spec``, or
    None. Subrequests cannot ask for it, so only ``exactly`` requests count."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    if not isinstance(requests, list):
        return None
    for i, request in enumerate(requests):
        exactly = request.get("exactly") if isinstance(request, dict) else None
        if isinstance(exactly, dict) and exactly.get("adminAccess") is True:
            return f"{prefix}.devices.requests[{i}].exactly.adminAccess"
    return None


def namespace_allows_admin(namespace: dict[str, Any] | None) -> bool:
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    return isinstance(labels, dict) and labels.get(ADMIN_NAMESPACE_LABEL) == "true"


class AdminAccessAdmission(NamespaceReader):
    reader = "admin access admission"

    async def admit(self, request: AdmissionRequest) -> None:
        if request.operation != CREATE or request.subresource or request.obj is None:
            return
        if request.resource == CLAIMS:
            path = admin_access_field(request.obj.get("spec"), "spec")
        elif request.resource == TEMPLATES:
            template_spec = request.obj.get("spec")
            inner = template_spec.get("spec") if isinstance(template_spec, dict) else None
            path = admin_access_field(inner, "spec.spec")
        else:
            return
        if path is None:
            return
        if namespace_allows_admin(await self.namespace(request.namespace or "")):
            return
        detail = (
            "admin access to devices requires the "
            f"`{ADMIN_NAMESPACE_LABEL}: true` label on the containing namespace"
        )
        resource = request.resource
        raise errors.invalid(
            resource.kind, resource.group, request.name, [field.forbidden(path, detail)]
        )

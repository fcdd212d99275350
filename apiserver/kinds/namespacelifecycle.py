"""Namespace lifecycle admission: what may be written into which namespace.

As Kubernetes' ``NamespaceLifecycle`` plugin: ``default``, ``kube-system`` and
``kube-public`` are never deleted; a namespaced object may not be created or updated in a
namespace that does not exist (404), nor created in one that is being deleted (403);
deletes of namespaced objects always go on, so that a terminating namespace can be emptied.

The plugin is part of the admission chain the registries are built with, and reads the
Namespaces through the Namespace registry of that same cluster, so it is told which one
after construction (``bind``).
"""

from __future__ import annotations

from ..machinery import CREATE, DELETE, UPDATE, AdmissionRequest
from .namespace import NamespaceReader, NamespaceStrategy, creation_refusal, deletion_refusal

NAMESPACES = NamespaceStrategy.core().resource


class NamespaceLifecycle(NamespaceReader):
    reader = "namespace lifecycle admission"

    async def admit(self, request: AdmissionRequest) -> None:
        if request.resource == NAMESPACES:
            if request.operation == DELETE:
                refusal = deletion_refusal(request.name)
                if refusal is not None:
                    raise refusal
            return
        if not request.resource.namespaced or request.operation not in (CREATE, UPDATE):
            return
        namespace = request.namespace or _namespace_of(request)
        if not namespace:
            return
        stored = await self.namespace(namespace)
        refusal = creation_refusal(namespace, stored)
        # Updates in a terminating namespace go on (finalizers must be removable there).
        if refusal is not None and (request.operation == CREATE or stored is None):
            raise refusal


def _namespace_of(request: AdmissionRequest) -> str:
    meta = (request.obj or {}).get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    return namespace if isinstance(namespace, str) else ""

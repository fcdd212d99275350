"""Parse a resource request path and method into what it asks for (Kubernetes' RequestInfo)."""

from __future__ import annotations

from dataclasses import dataclass

from . import errors


@dataclass(frozen=True)
class RequestInfo:
    verb: str
    resource: str
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


_WATCH_VALUES = ("true", "1")
NAMESPACE_SUBRESOURCES = ("status", "finalize")
"""After ``namespaces/<name>``, these name a subresource of that Namespace, not a resource
in it (as Kubernetes parses them)."""


def parse_request(method: str, segments: list[str], *, watch_param: str | None) -> RequestInfo:
    """``segments`` are the path parts after ``/apis/<group>/<version>`` (or ``/api/v1``)."""
    parts = list(segments)
    namespace = None
    if (
        len(parts) >= 3
        and parts[0] == "namespaces"
        and not (len(parts) == 3 and parts[2] in NAMESPACE_SUBRESOURCES)
    ):
        namespace = parts[1]
        parts = parts[2:]
    if namespace == "" or not parts or len(parts) > 3 or any(not p for p in parts):
        raise errors.StatusError(
            404, "NotFound", "the server could not find the requested resource"
        )
    resource = parts[0]
    name = parts[1] if len(parts) > 1 else None
    subresource = parts[2] if len(parts) > 2 else None
    method = method.upper()
    if method in ("GET", "HEAD"):
        if name is not None:
            verb = "get"
        else:
            verb = "watch" if (watch_param or "").lower() in _WATCH_VALUES else "list"
    elif method == "POST":
        verb = "create"
    elif method == "PUT":
        verb = "update"
    elif method == "PATCH":
        verb = "patch"
    elif method == "DELETE":
        verb = "delete" if name is not None else "deletecollection"
    else:
        raise errors.method_not_allowed(method, resource)
    if verb == "create" and name is not None and subresource is None:
        raise errors.method_not_allowed("create", resource)
    if verb in ("update", "patch") and name is None:
        raise errors.method_not_allowed(verb, resource)
    return RequestInfo(verb, resource, namespace, name, subresource)

"""The authorizer seam: may this user do this verb on this resource (or path)?

``RequestAttributes`` are Kubernetes' authorizer attributes, parsed once from the request
path, method and query (``request_attributes``); a list or watch that selects one name
with ``fieldSelector=metadata.name=<x>`` names it, as upstream's RequestInfo does. An ``Authorizer`` answers allow, deny or no
opinion with a reason; the server refuses anything not allowed with 403. Standalone mode
starts with ``AllowAuthenticated`` (every authenticated user may do anything); RBAC and the
delegated SubjectAccessReview plug in here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import parse_qs

from ..machinery import FieldGetter, errors, parse_field_selector, parse_request
from ..machinery.user import AUTHENTICATED, UserInfo


class Decision(enum.Enum):
    ALLOW = "Allow"
    DENY = "Deny"
    NO_OPINION = "NoOpinion"


@dataclass(frozen=True)
class Authorization:
    decision: Decision
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision is Decision.ALLOW


@dataclass(frozen=True)
class RequestAttributes:
    user: UserInfo
    verb: str
    """Resource verbs (get, list, watch, create, update, patch, delete, deletecollection)
    or, for non-resource requests, the lower-case HTTP method (get, post, …)."""
    resource_request: bool
    path: str = ""
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


class Authorizer(Protocol):
    async def authorize(self, attributes: RequestAttributes) -> Authorization: ...


class AllowAuthenticated:
    """Every authenticated user may do anything (standalone mode before RBAC is set up)."""

    async def authorize(self, attributes: RequestAttributes) -> Authorization:
        if AUTHENTICATED in attributes.user.groups:
            return Authorization(Decision.ALLOW)
        return Authorization(Decision.NO_OPINION, "not authenticated")


class _AnyField(dict[str, FieldGetter]):
    """Every field name is accepted: only ``metadata.name`` is looked at afterwards."""

    def __contains__(self, _key: object) -> bool:
        return True


_NAME_ONLY = _AnyField()

_NON_RESOURCE_VERBS = {
    "GET": "get",
    "HEAD": "get",
    "POST": "post",
    "PUT": "put",
    "PATCH": "patch",
    "DELETE": "delete",
    "OPTIONS": "options",
}


def request_attributes(user: UserInfo, method: str, path: str, query: str) -> RequestAttributes:
    """The attributes of a request, as Kubernetes' RequestInfo resolver finds them.

    ``/apis/<group>/<version>/...`` and ``/api/<version>/...`` with a resource are resource
    requests; everything else (discovery, ``/version``, ``/openapi``, health) is a
    non-resource request, authorized by path and the lower-case method.
    """
    parts = [p for p in path.split("/") if p != ""]
    rest: list[str] | None = None
    group = version = ""
    if len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    elif len(parts) >= 3 and parts[0] == "api":
        version, rest = parts[1], parts[2:]
    if rest is not None:
        params = parse_qs(query)
        watches = params.get("watch")
        watch = watches[0] if watches else None
        try:
            info = parse_request(method, rest, watch_param=watch)
        except errors.StatusError:
            info = None
        if info is not None:
            name = info.name or ""
            if not name and info.verb in ("list", "watch"):
                name = _selected_name(params.get("fieldSelector"))
            return RequestAttributes(
                user=user,
                verb=info.verb,
                resource_request=True,
                path=path,
                namespace=info.namespace or "",
                api_group=group,
                api_version=version,
                resource=info.resource,
                subresource=info.subresource or "",
                name=name,
            )
    verb = _NON_RESOURCE_VERBS.get(method.upper(), method.lower())
    return RequestAttributes(user=user, verb=verb, resource_request=False, path=path)


def _selected_name(selectors: list[str] | None) -> str:
    """The name a list or watch selects with ``fieldSelector=metadata.name=<x>`` (so that
    RBAC ``resourceNames`` can allow it, as for ``kubectl wait``), or ''."""
    if not selectors:
        return ""
    try:
        selector = parse_field_selector(selectors[0], _NAME_ONLY)
    except errors.StatusError:
        return ""  # the handler answers the bad selector; here it selects no name
    name = selector.exact("metadata.name") or ""
    if name in (".", "..") or "/" in name or "%" in name:
        return ""
    return name


def forbidden(attributes: RequestAttributes, reason: str = "") -> errors.StatusError:
    """The 403 ``Status`` worded as kube-apiserver words it."""
    who = f'User "{attributes.user.name}"'
    suffix = f": {reason}" if reason else ""
    if not attributes.resource_request:
        return errors.StatusError(
            403,
            "Forbidden",
            f'forbidden: {who} cannot {attributes.verb} path "{attributes.path}"{suffix}',
            details={},
        )
    resource = attributes.resource
    if attributes.subresource:
        resource = f"{resource}/{attributes.subresource}"
    qualified = (
        f"{attributes.resource}.{attributes.api_group}"
        if attributes.api_group
        else (attributes.resource)
    )
    named = f' "{attributes.name}"' if attributes.name else ""
    scope = (
        f'in the namespace "{attributes.namespace}"'
        if attributes.namespace
        else "at the cluster scope"
    )
    message = (
        f"{qualified}{named} is forbidden: {who} cannot {attributes.verb} resource"
        f' "{resource}" in API group "{attributes.api_group}" {scope}{suffix}'
    )
    details: dict[str, str] = {"kind": attributes.resource}
    if attributes.name:
        details["name"] = attributes.name
    if attributes.api_group:
        details["group"] = attributes.api_group
    return errors.StatusError(403, "Forbidden", message, details=details)

"""What the review kinds answer: their status, computed from the spec, the caller and the
authenticator or authorizer. Pure of HTTP and storage; the create-only resources call these.

* TokenReview: who a token belongs to (the server's own authenticators).
* SelfSubjectReview: who the caller is (``kubectl auth whoami``).
* SubjectAccessReview / SelfSubjectAccessReview: would the authorizer allow the attributes,
  for the user named in the spec or for the caller (``kubectl auth can-i``).
* SelfSubjectRulesReview: the caller's rules in a namespace (``kubectl auth can-i --list``).
"""

from __future__ import annotations

from typing import Protocol

from ..api.authentication import TokenReviewSpec
from ..api.authorization import (
    NonResourceAttributes,
    ResourceAttributes,
    SelfSubjectAccessReviewSpec,
    SubjectAccessReviewSpec,
)
from ..machinery.user import UserInfo
from ..toolkit import JSON
from .authenticator import Authenticator
from .authorizer import Authorizer, Decision, RequestAttributes
from .credentials import Credentials
from .rbac.authorizer import RuleSet
from .rbac.rules import Rule


class RuleResolver(Protocol):
    def rules_for(self, user: UserInfo, namespace: str) -> RuleSet: ...


def user_info_json(user: UserInfo) -> JSON:
    out: JSON = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        out["uid"] = user.uid
    if user.extra:
        out["extra"] = {k: list(v) for k, v in user.extra.items()}
    return out


def self_subject_review_status(user: UserInfo) -> JSON:
    return {"userInfo": user_info_json(user)}


async def token_review_status(spec: TokenReviewSpec, authenticator: Authenticator) -> JSON:
    token = spec.token or ""
    user = None
    if token:
        user = await authenticator.authenticate(
            Credentials((("authorization", f"Bearer {token}"),))
        )
    if user is None:
        return {"authenticated": False, "user": {}}
    status: JSON = {"authenticated": True, "user": user_info_json(user)}
    if spec.audiences:
        status["audiences"] = list(spec.audiences)
    return status


def _attributes(
    user: UserInfo,
    resource: ResourceAttributes | None,
    non_resource: NonResourceAttributes | None,
) -> RequestAttributes:
    if resource is not None:
        return RequestAttributes(
            user=user,
            verb=resource.verb or "",
            resource_request=True,
            namespace=resource.namespace or "",
            api_group=resource.group or "",
            api_version=resource.version or "",
            resource=resource.resource or "",
            subresource=resource.subresource or "",
            name=resource.name or "",
        )
    path = non_resource.path if non_resource is not None else ""
    verb = non_resource.verb if non_resource is not None else ""
    return RequestAttributes(user=user, verb=verb or "", resource_request=False, path=path or "")


def subject_user(spec: SubjectAccessReviewSpec) -> UserInfo:
    """The user a SubjectAccessReview asks about, exactly as the spec names it."""
    extra = {k: tuple(v) for k, v in (spec.extra or {}).items()}
    return UserInfo(spec.user or "", spec.uid or "", tuple(spec.groups or ()), extra)


async def access_review_status(
    user: UserInfo,
    spec: SubjectAccessReviewSpec | SelfSubjectAccessReviewSpec,
    authorizer: Authorizer,
) -> JSON:
    """The status of a (Self)SubjectAccessReview: allowed, denied and the reason."""
    attributes = _attributes(user, spec.resource_attributes, spec.non_resource_attributes)
    decision = await authorizer.authorize(attributes)
    status: JSON = {"allowed": decision.allowed}
    if decision.decision is Decision.DENY:
        status["denied"] = True
    if decision.reason:
        status["reason"] = decision.reason
    return status


def rules_review_status(user: UserInfo, namespace: str, resolver: RuleResolver) -> JSON:
    found = resolver.rules_for(user, namespace)
    resource_rules: list[JSON] = []
    non_resource_rules: list[JSON] = []
    for rule in found.rules:
        if rule.resources:
            entry: JSON = {
                "verbs": list(rule.verbs),
                "apiGroups": list(rule.api_groups),
                "resources": list(rule.resources),
            }
            if rule.resource_names:
                entry["resourceNames"] = list(rule.resource_names)
            resource_rules.append(entry)
        if rule.non_resource_urls:
            non_resource_rules.append(
                {"verbs": list(rule.verbs), "nonResourceURLs": list(rule.non_resource_urls)}
            )
    status: JSON = {
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": bool(found.errors),
    }
    if found.errors:
        status["evaluationError"] = found.reason.removeprefix("RBAC: ")
    return status


class EveryRule:
    """The rules of a server that allows everything (authorization off): ``*`` on all."""

    def rules_for(self, user: UserInfo, namespace: str) -> RuleSet:
        return RuleSet((Rule(("*",), ("*",), ("*",)), Rule(("*",), non_resource_urls=("*",))))

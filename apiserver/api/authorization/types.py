"""``authorization.k8s.io/v1`` reviews: create-only objects the server answers, never stores.

SubjectAccessReview asks whether a given user may do something; SelfSubjectAccessReview
whether the caller may (``kubectl auth can-i``); SelfSubjectRulesReview what the caller may
do in a namespace (``kubectl auth can-i --list``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..base import APIModel
from ..meta import KindModel


class ResourceAttributes(APIModel):
    namespace: str | None = Field(None, description="Namespace of the action; empty for all.")
    verb: str | None = Field(None, description="A Kubernetes resource API verb; '*' is all.")
    group: str | None = Field(None, description="API group of the resource; '*' is all.")
    version: str | None = Field(None, description="API version of the resource; '*' is all.")
    resource: str | None = Field(None, description="A resource type; '*' is all.")
    subresource: str | None = Field(None, description="A subresource; '' is none.")
    name: str | None = Field(None, description="Name of the object; '' is all.")
    field_selector: dict[str, Any] | None = Field(
        None, description="Field selector requirements of a list or watch (not evaluated)."
    )
    label_selector: dict[str, Any] | None = Field(
        None, description="Label selector requirements of a list or watch (not evaluated)."
    )


class NonResourceAttributes(APIModel):
    path: str | None = Field(None, description="The URL path of the request.")
    verb: str | None = Field(None, description="The standard HTTP verb.")


class SubjectAccessReviewSpec(APIModel):
    resource_attributes: ResourceAttributes | None = Field(
        None, description="For a resource request; exactly one of the two is set."
    )
    non_resource_attributes: NonResourceAttributes | None = Field(
        None, description="For a non-resource request; exactly one of the two is set."
    )
    user: str | None = Field(None, description="The user to test for.")
    groups: list[str] | None = Field(None, description="The groups to test for.")
    extra: dict[str, list[str]] | None = Field(None, description="Extra user attributes.")
    uid: str | None = Field(None, description="The user's uid.")


class SelfSubjectAccessReviewSpec(APIModel):
    resource_attributes: ResourceAttributes | None = Field(
        None, description="For a resource request; exactly one of the two is set."
    )
    non_resource_attributes: NonResourceAttributes | None = Field(
        None, description="For a non-resource request; exactly one of the two is set."
    )


class SubjectAccessReviewStatus(APIModel):
    allowed: bool = Field(False, description="True if the action would be allowed.")
    denied: bool | None = Field(None, description="True if the action would be denied outright.")
    reason: str | None = Field(None, description="Why the action is allowed or denied.")
    evaluation_error: str | None = Field(
        None, description="An error while checking; the answer may still be usable."
    )


class SubjectAccessReview(KindModel):
    """Checks whether a user or group can perform an action."""

    spec: SubjectAccessReviewSpec = Field(description="What is being asked.")
    status: SubjectAccessReviewStatus | None = Field(None, description="Filled in by the server.")


class SelfSubjectAccessReview(KindModel):
    """Checks whether the caller can perform an action."""

    spec: SelfSubjectAccessReviewSpec = Field(description="What is being asked.")
    status: SubjectAccessReviewStatus | None = Field(None, description="Filled in by the server.")


class SelfSubjectRulesReviewSpec(APIModel):
    namespace: str | None = Field(None, description="The namespace to evaluate rules for.")


class ResourceRule(APIModel):
    verbs: list[str] = Field(description="Allowed verbs; '*' is all.")
    api_groups: list[str] | None = Field(None, alias="apiGroups", description="API groups.")
    resources: list[str] | None = Field(None, description="Resources.")
    resource_names: list[str] | None = Field(None, description="Allowed names; empty is all.")


class NonResourceRule(APIModel):
    verbs: list[str] = Field(description="Allowed verbs; '*' is all.")
    non_resource_urls: list[str] | None = Field(
        None, alias="nonResourceURLs", description="Allowed paths; a trailing '*' is a prefix."
    )


class SubjectRulesReviewStatus(APIModel):
    resource_rules: list[ResourceRule] = Field(default_factory=list, description="Resource rules.")
    non_resource_rules: list[NonResourceRule] = Field(
        default_factory=list, description="Non-resource rules."
    )
    incomplete: bool = Field(False, description="True if some rules could not be resolved.")
    evaluation_error: str | None = Field(None, description="Why the list is incomplete.")


class SelfSubjectRulesReview(KindModel):
    """Lists what the caller may do in a namespace (the list may be incomplete)."""

    spec: SelfSubjectRulesReviewSpec = Field(description="The namespace to list rules for.")
    status: SubjectRulesReviewStatus | None = Field(None, description="Filled in by the server.")

"""auth/reviews.py: the status each review kind answers with, and the reviews' validation."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.authentication import TokenReviewSpec
from apiserver.api.authorization import (
    SelfSubjectAccessReviewSpec,
    SubjectAccessReview,
    SubjectAccessReviewSpec,
    validate_self_subject_access_review,
    validate_subject_access_review,
)
from apiserver.auth import AuthenticatorChain, TokenAuthenticator, UserInfo
from apiserver.auth.rbac import RBACAuthorizer, RBACIndex
from apiserver.auth.reviews import (
    access_review_status,
    rules_review_status,
    self_subject_review_status,
    subject_user,
    token_review_status,
)
from apiserver.machinery.user import AUTHENTICATED

GRACE = UserInfo("grace", "u-1", ("team", AUTHENTICATED), {"scopes": ("a",)})


def authorizer(*extra: dict[str, Any]) -> RBACAuthorizer:
    index = RBACIndex()
    for obj in [
        {
            "kind": "ClusterRole",
            "metadata": {"name": "pool-status-reader"},
            "rules": [
                {
                    "apiGroups": ["resource.k8s.io"],
                    "resources": ["resourcepoolstatusrequests"],
                    "verbs": ["create", "get", "list", "delete"],
                },
                {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
            ],
        },
        {
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "grace"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "pool-status-reader",
            },
            "subjects": [{"kind": "Group", "name": "team"}],
        },
        *extra,
    ]:
        index.upsert(obj)
    return RBACAuthorizer(index)


def test_self_subject_review_is_the_caller() -> None:
    assert self_subject_review_status(GRACE) == {
        "userInfo": {
            "username": "grace",
            "uid": "u-1",
            "groups": ["team", AUTHENTICATED],
            "extra": {"scopes": ["a"]},
        }
    }


async def test_token_review() -> None:
    authenticator = AuthenticatorChain([TokenAuthenticator({"secret": GRACE})])
    known = await token_review_status(TokenReviewSpec(token="secret"), authenticator)
    assert known["authenticated"] is True
    assert known["user"]["username"] == "grace"
    unknown = await token_review_status(TokenReviewSpec(token="nope"), authenticator)
    assert unknown == {"authenticated": False, "user": {}}


@pytest.mark.parametrize(
    ("spec", "allowed"),
    [
        (
            {
                "resourceAttributes": {
                    "verb": "create",
                    "group": "resource.k8s.io",
                    "resource": "resourcepoolstatusrequests",
                }
            },
            True,
        ),
        (
            {
                "resourceAttributes": {
                    "verb": "list",
                    "group": "resource.k8s.io",
                    "resource": "resourceclaims",
                    "namespace": "default",
                }
            },
            False,
        ),
        ({"nonResourceAttributes": {"verb": "get", "path": "/metrics"}}, True),
        ({"nonResourceAttributes": {"verb": "get", "path": "/debug"}}, False),
    ],
)
async def test_self_subject_access_review(spec: dict[str, Any], allowed: bool) -> None:
    parsed = SelfSubjectAccessReviewSpec.model_validate(spec)
    status = await access_review_status(GRACE, parsed, authorizer())
    assert status["allowed"] is allowed
    assert "denied" not in status


async def test_subject_access_review_for_a_named_user_and_groups() -> None:
    spec = SubjectAccessReviewSpec.model_validate(
        {
            "user": "someone",
            "groups": ["team"],
            "resourceAttributes": {
                "verb": "get",
                "group": "resource.k8s.io",
                "resource": "resourcepoolstatusrequests",
                "name": "r",
            },
        }
    )
    who = subject_user(spec)
    assert who == UserInfo("someone", "", ("team",), {})
    assert (await access_review_status(who, spec, authorizer()))["allowed"] is True
    alone = subject_user(
        SubjectAccessReviewSpec.model_validate(
            {**spec.model_dump(by_alias=True, exclude_none=True), "groups": []}
        )
    )
    assert (await access_review_status(alone, spec, authorizer()))["allowed"] is False


async def test_missing_role_becomes_the_reason() -> None:
    dangling = {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "dangling"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gone"},
        "subjects": [{"kind": "User", "name": "grace"}],
    }
    spec = SelfSubjectAccessReviewSpec.model_validate(
        {
            "resourceAttributes": {
                "verb": "delete",
                "resource": "pods",
                "namespace": "x",
                "name": "p",
            }
        }
    )
    status = await access_review_status(GRACE, spec, authorizer(dangling))
    assert status == {
        "allowed": False,
        "reason": 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found',
    }
    rules = rules_review_status(GRACE, "x", authorizer(dangling))
    assert rules["incomplete"] is True
    assert rules["evaluationError"] == 'clusterrole.rbac.authorization.k8s.io "gone" not found'


def test_rules_review_splits_resource_and_url_rules() -> None:
    status = rules_review_status(GRACE, "default", authorizer())
    assert status == {
        "resourceRules": [
            {
                "verbs": ["create", "get", "list", "delete"],
                "apiGroups": ["resource.k8s.io"],
                "resources": ["resourcepoolstatusrequests"],
            }
        ],
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}],
        "incomplete": False,
    }


@pytest.mark.parametrize(
    ("spec", "fields"),
    [
        ({"user": "a", "resourceAttributes": {"verb": "get"}}, []),
        ({"groups": ["g"], "nonResourceAttributes": {"verb": "get", "path": "/"}}, []),
        ({"user": "a"}, ["spec.resourceAttributes"]),
        (
            {"user": "a", "resourceAttributes": {}, "nonResourceAttributes": {}},
            ["spec.nonResourceAttributes"],
        ),
        ({"resourceAttributes": {"verb": "get"}}, ["spec.user"]),
    ],
)
def test_subject_access_review_validation(spec: dict[str, Any], fields: list[str]) -> None:
    review = SubjectAccessReview.model_validate({"spec": spec})
    assert [e.field for e in validate_subject_access_review(review)] == fields


def test_self_subject_access_review_needs_exactly_one_kind_of_attributes() -> None:
    assert validate_self_subject_access_review(SelfSubjectAccessReviewSpec()) != []
    assert (
        validate_self_subject_access_review(
            SelfSubjectAccessReviewSpec.model_validate({"nonResourceAttributes": {"path": "/"}})
        )
        == []
    )

"""The review kinds, served create-only: what ``kubectl auth whoami`` and ``kubectl auth
can-i`` (with ``--list`` and ``--as``) ask, answered at once from the authenticator and the
authorizer, never stored.

``authentication.k8s.io/v1`` TokenReview and SelfSubjectReview; ``authorization.k8s.io/v1``
SubjectAccessReview, SelfSubjectAccessReview and SelfSubjectRulesReview. The status of each
is computed in ``reviews``; here each kind says its names, its validation and which
computation answers it.
"""

from __future__ import annotations

from typing import Any

from ..api.authentication import (
    AUTHENTICATION_GROUP,
    AUTHENTICATION_VERSION,
    SelfSubjectReview,
    TokenReview,
)
from ..api.authorization import (
    AUTHORIZATION_GROUP,
    AUTHORIZATION_VERSION,
    SelfSubjectAccessReview,
    SelfSubjectRulesReview,
    SubjectAccessReview,
    validate_self_subject_access_review,
    validate_subject_access_review,
)
from ..api.field import FieldError
from ..machinery import ReviewStrategy
from ..machinery.user import UserInfo
from .authenticator import Authenticator
from .authorizer import Authorizer
from .reviews import (
    RuleResolver,
    access_review_status,
    rules_review_status,
    self_subject_review_status,
    subject_user,
    token_review_status,
)


class TokenReviewStrategy(ReviewStrategy[TokenReview]):
    model = TokenReview
    version = AUTHENTICATION_VERSION
    kind = "TokenReview"
    plural = "tokenreviews"
    singular = "tokenreview"

    def __init__(self, authenticator: Authenticator) -> None:
        super().__init__(AUTHENTICATION_GROUP)
        self.authenticator = authenticator

    async def review(self, obj: TokenReview, user: UserInfo) -> dict[str, Any]:
        return await token_review_status(obj.spec, self.authenticator)


class SelfSubjectReviewStrategy(ReviewStrategy[SelfSubjectReview]):
    model = SelfSubjectReview
    version = AUTHENTICATION_VERSION
    kind = "SelfSubjectReview"
    plural = "selfsubjectreviews"
    singular = "selfsubjectreview"

    def __init__(self) -> None:
        super().__init__(AUTHENTICATION_GROUP)

    async def review(self, obj: SelfSubjectReview, user: UserInfo) -> dict[str, Any]:
        return self_subject_review_status(user)


class SubjectAccessReviewStrategy(ReviewStrategy[SubjectAccessReview]):
    model = SubjectAccessReview
    version = AUTHORIZATION_VERSION
    kind = "SubjectAccessReview"
    plural = "subjectaccessreviews"
    singular = "subjectaccessreview"

    def __init__(self, authorizer: Authorizer) -> None:
        super().__init__(AUTHORIZATION_GROUP)
        self.authorizer = authorizer

    def validate(self, obj: SubjectAccessReview) -> list[FieldError]:
        return validate_subject_access_review(obj)

    async def review(self, obj: SubjectAccessReview, user: UserInfo) -> dict[str, Any]:
        return await access_review_status(subject_user(obj.spec), obj.spec, self.authorizer)


class SelfSubjectAccessReviewStrategy(ReviewStrategy[SelfSubjectAccessReview]):
    model = SelfSubjectAccessReview
    version = AUTHORIZATION_VERSION
    kind = "SelfSubjectAccessReview"
    plural = "selfsubjectaccessreviews"
    singular = "selfsubjectaccessreview"

    def __init__(self, authorizer: Authorizer) -> None:
        super().__init__(AUTHORIZATION_GROUP)
        self.authorizer = authorizer

    def validate(self, obj: SelfSubjectAccessReview) -> list[FieldError]:
        return validate_self_subject_access_review(obj.spec)

    async def review(self, obj: SelfSubjectAccessReview, user: UserInfo) -> dict[str, Any]:
        return await access_review_status(user, obj.spec, self.authorizer)


class SelfSubjectRulesReviewStrategy(ReviewStrategy[SelfSubjectRulesReview]):
    model = SelfSubjectRulesReview
    version = AUTHORIZATION_VERSION
    kind = "SelfSubjectRulesReview"
    plural = "selfsubjectrulesreviews"
    singular = "selfsubjectrulesreview"

    def __init__(self, resolver: RuleResolver) -> None:
        super().__init__(AUTHORIZATION_GROUP)
        self.resolver = resolver

    async def review(self, obj: SelfSubjectRulesReview, user: UserInfo) -> dict[str, Any]:
        return rules_review_status(user, obj.spec.namespace or "", self.resolver)


def review_strategies(
    authenticator: Authenticator, authorizer: Authorizer, resolver: RuleResolver
) -> list[ReviewStrategy[Any]]:
    return [
        TokenReviewStrategy(authenticator),
        SelfSubjectReviewStrategy(),
        SubjectAccessReviewStrategy(authorizer),
        SelfSubjectAccessReviewStrategy(authorizer),
        SelfSubjectRulesReviewStrategy(resolver),
    ]

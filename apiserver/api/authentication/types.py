"""``authentication.k8s.io/v1`` reviews: create-only objects the server answers, never stores.

A TokenReview asks who a bearer token belongs to; a SelfSubjectReview who the caller is
(``kubectl auth whoami``).
"""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel
from ..meta import KindModel


class UserInfo(APIModel):
    """An authenticated user."""

    username: str | None = Field(None, description="The name that uniquely identifies the user.")
    uid: str | None = Field(None, description="A unique value that identifies the user over time.")
    groups: list[str] | None = Field(None, description="The groups the user belongs to.")
    extra: dict[str, list[str]] | None = Field(
        None, description="Any additional information provided by the authenticator."
    )


class TokenReviewSpec(APIModel):
    token: str | None = Field(None, description="The opaque bearer token.")
    audiences: list[str] | None = Field(
        None, description="Audiences the token must be valid for; empty is the server's own."
    )


class TokenReviewStatus(APIModel):
    authenticated: bool | None = Field(None, description="True if the token is valid.")
    user: UserInfo | None = Field(None, description="Who the token belongs to.")
    audiences: list[str] | None = Field(None, description="Audiences the token is valid for.")
    error: str | None = Field(None, description="Why the token could not be checked.")


class TokenReview(KindModel):
    """Attempts to authenticate a token to a known user."""

    spec: TokenReviewSpec = Field(description="The token to review.")
    status: TokenReviewStatus | None = Field(None, description="Filled in by the server.")


class SelfSubjectReviewStatus(APIModel):
    user_info: UserInfo | None = Field(None, description="The caller, as the server sees it.")


class SelfSubjectReview(KindModel):
    """Returns the user attributes the server has for the caller."""

    status: SelfSubjectReviewStatus | None = Field(None, description="Filled in by the server.")

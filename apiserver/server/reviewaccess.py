"""What an AllocationReview may look at and hold, checked before the allocation runs.

Creating an AllocationReview is allowed by the request's own authorization; what the review
then reads and holds is authorized here, with the server's authorizer (RBAC standalone,
SubjectAccessReview aggregated), for the user who asks:

- each stored claim the review names needs ``get`` on that ResourceClaim
  (``resource.k8s.io``, its namespace and name): the answer shows the claim's requests and
  the devices that would satisfy them, which is reading it. An inline claim spec needs
  nothing more: the caller wrote it.
- ``reserve: true`` needs ``create`` on ``devicereservations`` in the server's group: the
  review makes a DeviceReservation in the caller's name, which holds devices from every
  other allocation until it lapses. DeviceReservations cannot be created any other way
  (the resource serves no create), so this verb means exactly "may reserve through a
  review".

A claim the caller may not read is refused with the same 403 whether or not it exists,
before the claim is looked up (so 201-versus-404 never tells a stranger that a claim is
there), worded from the request alone; a refusal holds nothing. A caller who may read the
claim and names one that does not exist gets the 404 a ``get`` would give it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..api.resource import DRA_GROUP, AllocationReview
from ..auth import Authorizer, RequestAttributes, forbidden
from ..machinery.user import UserInfo

CLAIMS_VERSION = "v1"
RESERVATIONS_VERSION = "v1alpha3"
RESERVE_VERB = "create"
"""The verb on ``devicereservations`` that ``reserve: true`` needs."""
NAMED_CLAIM = "an AllocationReview that names a stored claim needs get on it"
RESERVING = "an AllocationReview with reserve: true needs create on devicereservations"

Reviewer = Callable[[AllocationReview, UserInfo], Awaitable[dict[str, Any]]]


def _claim_attributes(user: UserInfo, namespace: str, name: str) -> RequestAttributes:
    return RequestAttributes(
        user=user,
        verb="get",
        resource_request=True,
        path=f"/apis/{DRA_GROUP}/{CLAIMS_VERSION}/namespaces/{namespace}/resourceclaims/{name}",
        namespace=namespace,
        api_group=DRA_GROUP,
        api_version=CLAIMS_VERSION,
        resource="resourceclaims",
        name=name,
    )


def _reserve_attributes(user: UserInfo, group: str) -> RequestAttributes:
    return RequestAttributes(
        user=user,
        verb=RESERVE_VERB,
        resource_request=True,
        path=f"/apis/{group}/{RESERVATIONS_VERSION}/devicereservations",
        api_group=group,
        api_version=RESERVATIONS_VERSION,
        resource="devicereservations",
    )


async def check_review_access(
    review: AllocationReview, user: UserInfo, authorizer: Authorizer, group: str
) -> None:
    """Raise the 403 ``StatusError`` for the first thing ``user`` may not do through
    ``review``; return when every named claim may be read (and reserving is allowed)."""
    for ref in review.spec.claims:
        if ref.spec is not None:
            continue
        attributes = _claim_attributes(user, ref.namespace or "", ref.name or "")
        if not (await authorizer.authorize(attributes)).allowed:
            raise forbidden(attributes, NAMED_CLAIM)
    if review.spec.reserve:
        attributes = _reserve_attributes(user, group)
        if not (await authorizer.authorize(attributes)).allowed:
            raise forbidden(attributes, RESERVING)


def authorized_reviews(reviewer: Reviewer, authorizer: Authorizer, group: str) -> Reviewer:
    """``reviewer`` run only for reviews their caller may make in full."""

    async def review(obj: AllocationReview, user: UserInfo) -> dict[str, Any]:
        await check_review_access(obj, user, authorizer, group)
        return await reviewer(obj, user)

    return review

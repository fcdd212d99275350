"""AllocationReview (``v1alpha3``): create-only and never stored, like SubjectAccessReview.

The kind says how a review is defaulted and validated; the answer comes from the allocation
service the server assembles (pools, the allocator, reservations), handed in with
``answer_with`` because those layers sit above the kinds. Until one is handed in, a review
is answered 503 ServiceUnavailable.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..api.field import FieldError
from ..api.resource import (
    RESERVATION_SECONDS_DEFAULT,
    AllocationReview,
    set_claim_spec_defaults,
    validate_allocation_review,
)
from ..machinery import ReviewStrategy, errors
from ..machinery.user import UserInfo

VERSION = "v1alpha3"

Reviewer = Callable[[AllocationReview, UserInfo], Awaitable[dict[str, Any]]]


class AllocationReviewStrategy(ReviewStrategy[AllocationReview]):
    model = AllocationReview
    version = VERSION
    kind = "AllocationReview"
    plural = "allocationreviews"
    singular = "allocationreview"

    def __init__(self, group: str) -> None:
        super().__init__(group)
        self._reviewer: Reviewer | None = None

    def answer_with(self, reviewer: Reviewer) -> None:
        self._reviewer = reviewer

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        if spec.get("reserve") and spec.get("reservationSeconds") is None:
            spec["reservationSeconds"] = RESERVATION_SECONDS_DEFAULT
        claims = spec.get("claims")
        for claim in claims if isinstance(claims, list) else []:
            inline = claim.get("spec") if isinstance(claim, dict) else None
            if isinstance(inline, dict):
                set_claim_spec_defaults(inline)

    def validate(self, obj: AllocationReview) -> list[FieldError]:
        return validate_allocation_review(obj)

    async def review(self, obj: AllocationReview, user: UserInfo) -> dict[str, Any]:
        if self._reviewer is None:
            raise errors.StatusError(
                503, "ServiceUnavailable", "the allocation service is not running"
            )
        return await self._reviewer(obj, user)

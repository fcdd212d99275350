"""A review kind: create-only and never stored, like SubjectAccessReview.

POST sends a spec; the answer is the same object with its computed status, at once, with
201. Nothing is written, so there is no name to get, nothing to list or watch, and every
other verb is 405. The body is read by ``intake`` and validated, as any create is (unknown
fields per fieldValidation, 422 naming every failing field); the kind's ``ReviewStrategy``
computes the status from the spec and from who asks. A client that goes before the answer
cancels the review (``disconnect``).
"""

from __future__ import annotations

from typing import Any, Generic

from ..api import validate_object_meta
from ..api.field import FieldError
from . import errors
from .intake import BodyType, check_type_meta, parse_written
from .resource import CREATE_ONLY_VERBS
from .rest import WriteOptions, WriteResult, unstored
from .strategy import M, Strategy
from .user import UserInfo


class ReviewStrategy(Strategy[M], Generic[M]):
    """A review kind: validation as any kind, and ``review`` to compute the answer."""

    verbs = CREATE_ONLY_VERBS

    async def review(self, obj: M, user: UserInfo) -> dict[str, Any]:
        """The status to answer with, for the validated object and who asks."""
        raise NotImplementedError


class ReviewResource:
    subresource = ""
    stops_when_client_leaves = True
    """Nothing is stored that the client must know of: if it goes before the answer, the
    review is cancelled (``disconnect``)."""

    def __init__(self, strategy: ReviewStrategy[Any]) -> None:
        self.strategy = strategy
        self.resource = strategy.resource
        self.field_getters = strategy.field_getters()
        self.body_type = BodyType(self.resource.group_version, self.resource.kind)

    async def create(
        self, namespace: str | None, body: dict[str, Any], opts: WriteOptions
    ) -> WriteResult:
        check_type_meta(body, self.body_type)
        meta = body.setdefault("metadata", {})
        if self.resource.namespaced and namespace:
            meta["namespace"] = namespace
        body.pop("status", None)
        self.strategy.prepare_for_create(body)
        parsed, warnings = parse_written(
            body, self.strategy.model, self.body_type, opts.field_validation
        )
        name = meta.get("name") or ""
        problems: list[FieldError] = []
        if name:
            problems += validate_object_meta(
                parsed.metadata,
                namespaced=self.resource.namespaced,
                name_errors=self.strategy.name_errors,
            )
        problems += self.strategy.validate(parsed)
        if problems:
            raise errors.invalid(self.resource.kind, self.resource.group, name, problems)
        body["status"] = await self.strategy.review(parsed, opts.user)
        return WriteResult(unstored(body), 201, warnings)

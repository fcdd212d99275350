"""One exception family for every request failure, each rendered as a Kubernetes ``Status``.

Handlers raise ``StatusError``; one place (``status_response``) turns it into the HTTP
answer. Storage errors are translated here too, so no other module needs to know both.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ..api.field import FieldError, shorten
from ..storage import (
    KeyExistsError,
    KeyNotFoundError,
    PreconditionFailedError,
    RevisionCompactedError,
    StorageError,
    StorageUnavailableError,
)


class StatusError(Exception):
    """A failed request, carrying everything its ``Status`` body says."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body

    def body(self) -> bytes:
        return orjson.dumps(self.status())


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(name: str, group: str, kind: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": kind}
    if group:
        details["group"] = group
    details.update({k: v for k, v in extra.items() if v is not None})
    return details


def not_found(resource: str, group: str, name: str) -> StatusError:
    name = shorten(name)
    return StatusError(
        404,
        "NotFound",
        f'{_qualified(resource, group)} "{name}" not found',
        details=_details(name, group, resource),
    )


def already_exists(resource: str, group: str, name: str) -> StatusError:
    name = shorten(name)
    return StatusError(
        409,
        "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists',
        details=_details(name, group, resource),
    )


def conflict(resource: str, group: str, name: str, why: str) -> StatusError:
    name = shorten(name)
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
        details=_details(name, group, resource),
    )


MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(kind: str, group: str, name: str, errors: Iterable[FieldError]) -> StatusError:
    errs = list(errors)
    causes = [
        {"reason": e.type.reason, "message": e.message(), "field": e.shown_field()} for e in errs
    ]
    summary = ", ".join(str(e) for e in errs)
    if len(errs) > 1:
        summary = f"[{summary}]"
    name = shorten(name)  # a name too long to be valid is shown shortened, as other values
    return StatusError(
        422,
        "Invalid",
        f'{_qualified(kind, group)} "{name}" is invalid: {summary}',
        details=_details(name, group, kind, causes=causes),
    )


def bad_request(message: str, causes: list[dict[str, str]] | None = None) -> StatusError:
    return StatusError(400, "BadRequest", message, details={"causes": causes} if causes else None)


def unauthorized(message: str = "Unauthorized") -> StatusError:
    return StatusError(401, "Unauthorized", message)


def method_not_allowed(verb: str, resource: str) -> StatusError:
    return StatusError(
        405, "MethodNotAllowed", f'{verb} is not supported on resources of kind "{resource}"'
    )


def not_acceptable(message: str) -> StatusError:
    return StatusError(406, "NotAcceptable", message)


def unsupported_media_type(content_type: str, accepted: Iterable[str]) -> StatusError:
    supported = ", ".join(accepted)
    return StatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {supported}"
        if not content_type
        else f"the media type {content_type!r} is not supported; accepted media types include: {supported}",
    )


def too_large(limit: int) -> StatusError:
    return StatusError(
        413, "RequestEntityTooLarge", f"the request body is larger than the limit of {limit} bytes"
    )


def too_large_patch(message: str) -> StatusError:
    return StatusError(413, "RequestEntityTooLarge", message)


def expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def too_many_requests(message: str, retry_after: int) -> StatusError:
    """A per-user limit reached (as Kubernetes' rate-limiting admission refuses): the
    seconds go in the Status details, not in a ``Retry-After`` header, for client-go
    retries a 429 that has one silently, up to ten times, and kubectl would then wait
    without a word, or print a bare EOF when a retried body cannot be sent again, instead
    of the message."""
    return StatusError(429, "TooManyRequests", message, details={"retryAfterSeconds": retry_after})


def internal(message: str) -> StatusError:
    return StatusError(500, "InternalError", f"Internal error occurred: {message}")


def unavailable(message: str, retry_after: int = 1) -> StatusError:
    return StatusError(
        503,
        "ServiceUnavailable",
        message,
        details={"retryAfterSeconds": retry_after},
        headers={"Retry-After": str(retry_after)},
    )


def timeout(message: str, causes: list[dict[str, str]] | None = None) -> StatusError:
    return StatusError(
        504,
        "Timeout",
        message,
        details={"causes": causes, "retryAfterSeconds": 1} if causes else {"retryAfterSeconds": 1},
    )


def from_storage(err: StorageError, resource: str, group: str, name: str) -> StatusError:
    """The Status a client sees for a storage failure on ``resource`` ``name``."""
    if isinstance(err, KeyNotFoundError):
        return not_found(resource, group, name)
    if isinstance(err, KeyExistsError):
        return already_exists(resource, group, name)
    if isinstance(err, PreconditionFailedError):
        return conflict(resource, group, name, MODIFIED)
    if isinstance(err, RevisionCompactedError):
        return expired(str(err))
    if isinstance(err, StorageUnavailableError):
        return unavailable(f"storage is unavailable: {err}")
    return internal(str(err))

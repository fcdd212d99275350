"""Typed errors of a Kubernetes API: the ``Status`` an answer carries, by its code.

``APIError`` is any failed call (code 0: the server could not be reached, or the connection
broke); ``NotFound`` (404), ``Conflict`` (409) and ``Gone`` (410: the resourceVersion asked
for is no longer in the server's history, list again) are the ones callers decide on.
"""

from __future__ import annotations

from typing import Any

from ..toolkit import JSON


class APIError(Exception):
    """A Kubernetes ``Status`` answer (or a transport failure, code 0)."""

    def __init__(self, code: int, reason: str, message: str, status: JSON | None = None) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.status: JSON = status or {}
        """The ``Status`` object the server answered with (empty when it sent none)."""

    @property
    def retryable(self) -> bool:
        """Worth trying again as it is: no answer, too many requests, or a server error."""
        return self.code == 0 or self.code == 429 or self.code >= 500


class NotFound(APIError):
    pass


class Conflict(APIError):
    pass


class Gone(APIError):
    """410: the resourceVersion is too old (``Expired``), or a continue token expired."""


_BY_CODE: dict[int, type[APIError]] = {404: NotFound, 409: Conflict, 410: Gone}


def error_of(code: int, body: Any, text: str = "") -> APIError:
    """The error for an answer with ``code`` and its decoded ``body`` (a ``Status``, or
    anything else, then described by the first bytes of ``text``)."""
    if isinstance(body, dict) and body.get("kind") == "Status":
        code = int(body.get("code") or code)
        kind = _BY_CODE.get(code, APIError)
        return kind(code, str(body.get("reason") or ""), str(body.get("message") or ""), body)
    return _BY_CODE.get(code, APIError)(code, "", text[:200])


def connection_failed(what: str, err: Exception) -> APIError:
    return APIError(0, "ConnectionFailed", f"{what}: {type(err).__name__}: {err}")

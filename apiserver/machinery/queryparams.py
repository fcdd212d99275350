"""Query parameters of resource requests, parsed strictly: a value that is not what its
parameter takes is a 400 ``Status`` naming the parameter, never a silent default.

Booleans take Kubernetes' spellings: ``false`` and ``0`` are false (any case); ``true``,
``1`` and an empty value (``?watch``) are true. Kubernetes reads every other value as true
too; this server refuses it instead, so a typo such as ``watch=maybe`` is not taken for a
list or a watch the client did not mean. Integers are decimal 64-bit numbers, never
negative for the parameters that count something.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..api.field import shorten
from . import errors

_TRUE = ("true", "1", "")
_FALSE = ("false", "0")
_INTEGER = re.compile(r"[+-]?[0-9]+")
INT64_MAX = 2**63 - 1

BOOLEANS = ("watch", "allowWatchBookmarks", "sendInitialEvents", "force", "orphanDependents")
"""The boolean parameters of the verbs served."""

COUNTS = ("limit", "timeoutSeconds", "gracePeriodSeconds")
"""The integer parameters of the verbs served; none may be negative."""


def boolean(params: Mapping[str, str], name: str) -> bool | None:
    """The parameter ``name`` as a boolean, or None when it is absent."""
    value = params.get(name)
    if value is None:
        return None
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise errors.bad_request(
        f"invalid value for query parameter {name}: {shorten(repr(value))}"
        " is not a boolean (true or false)"
    )


def flag(params: Mapping[str, str], name: str) -> bool:
    """The parameter ``name`` as a boolean; absent is false."""
    return boolean(params, name) or False


def count(params: Mapping[str, str], name: str) -> int | None:
    """The parameter ``name`` as a non-negative 64-bit integer, or None when it is absent
    or empty."""
    value = params.get(name)
    if value is None or value == "":
        return None
    if not _INTEGER.fullmatch(value):
        raise errors.bad_request(
            f"invalid value for query parameter {name}: {shorten(repr(value))} is not an integer"
        )
    # Python converts at most 4,300 digits; anything over 19 is out of range anyway.
    number = int(value) if len(value.lstrip("+-0")) <= 19 else INT64_MAX + 1
    if number < 0:
        raise errors.bad_request(f"invalid value for query parameter {name}: must not be negative")
    if number > INT64_MAX:
        raise errors.bad_request(
            f"invalid value for query parameter {name}: must be at most {INT64_MAX}"
        )
    return number


def check(params: Mapping[str, str]) -> None:
    """Refuse the request if any boolean or integer parameter it carries is malformed,
    whichever verb it turns out to be (a list ignores timeoutSeconds, but a typo in it is
    still a typo)."""
    for name in BOOLEANS:
        boolean(params, name)
    for name in COUNTS:
        count(params, name)

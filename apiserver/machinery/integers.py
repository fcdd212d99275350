"""Integers a request may carry: those of Go's ``int64``, as every Kubernetes integer is.

Decoders hand the rest over as ``Overflow`` markers (YAML and exact JSON parsing), and
``check_value`` turns the first one found into a 400 naming its field. orjson reads an
integer beyond 64 bits as a float (silently) and one between ``2**63`` and ``2**64`` as an
int; ``check_json`` therefore parses a body again exactly, with the standard library, when
it holds a run of 19 or more digits (the shortest that can leave the range), so ordinary
bodies cost one scan: the body with every digit made ``0`` and every other byte a space,
searched for 19 zeros (ten times faster than a regular expression, which tried a match at
every digit of a review's thousands of node names). Protobuf bodies cannot carry more than
64 bits (``protowire`` refuses longer varints).
"""

from __future__ import annotations

import json
from typing import Any

from . import errors

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19
_SHOWN_DIGITS = 24


class Overflow:
    """An integer literal outside ``int64``, kept as its text (never converted: Python
    refuses to convert more than 4,300 digits)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def shown(self) -> str:
        text = self.text.strip()
        return text if len(text) <= _SHOWN_DIGITS else f"{text[:_SHOWN_DIGITS]}..."


def in_range(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX


def parse_int(text: str) -> int | Overflow:
    """A decimal integer literal as an int, or an ``Overflow`` outside ``int64``."""
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 19:
        return Overflow(text)
    value = int(text)
    return value if in_range(value) else Overflow(text)


def _first_overflow(value: Any) -> tuple[str, Overflow] | None:
    """The field path and marker of the first ``Overflow`` (or out-of-range int) in
    ``value``, without recursion."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, Overflow):
            return path, node
        if isinstance(node, int) and not isinstance(node, bool) and not in_range(node):
            return path, Overflow(str(node))
        if isinstance(node, dict):
            for key, child in node.items():
                stack.append((f"{path}.{key}" if path else str(key), child))
        elif isinstance(node, list):
            for index, child in enumerate(node):
                stack.append((f"{path}[{index}]", child))
    return None


def check_value(value: Any, what: str = "the request body") -> None:
    """400 naming the field of the first integer in ``value`` outside ``int64``."""
    found = _first_overflow(value)
    if found is None:
        return
    path, overflow = found
    message = f"{overflow.shown()} does not fit in a 64-bit integer"
    field = path or "<root>"
    raise errors.bad_request(
        f"{what} could not be decoded: {field}: {message}",
        [{"reason": "FieldValueInvalid", "message": message, "field": field}],
    )


def check_json(body: bytes, what: str = "the request body") -> None:
    """400 if the JSON ``body`` (already known to parse) holds an integer outside
    ``int64``, naming its field."""
    if _LONG_RUN not in body.translate(_DIGITS_AS_ZEROS):
        return
    try:
        exact = json.loads(body, parse_int=parse_int)
    except (ValueError, RecursionError):
        return  # not the standard library's JSON; orjson's reading stands
    check_value(exact, what)

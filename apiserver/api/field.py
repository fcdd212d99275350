"""Field errors: what validation returns, each naming the field path it is about.

The machinery turns a list of these into one ``422 Invalid`` Status with a cause
per error, the way Kubernetes' ``field.ErrorList`` does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any


class ErrorType(Enum):
    """The kinds of field error, with the cause reason and the text Kubernetes uses."""

    REQUIRED = ("FieldValueRequired", "Required value")
    INVALID = ("FieldValueInvalid", "Invalid value")
    NOT_SUPPORTED = ("FieldValueNotSupported", "Unsupported value")
    DUPLICATE = ("FieldValueDuplicate", "Duplicate value")
    FORBIDDEN = ("FieldValueForbidden", "Forbidden")
    TOO_LONG = ("FieldValueTooLong", "Too long")
    TOO_MANY = ("FieldValueTooMany", "Too many")
    NOT_FOUND = ("FieldValueNotFound", "Not found")
    TYPE_INVALID = ("FieldValueTypeInvalid", "Invalid value")

    @property
    def reason(self) -> str:
        return self.value[0]

    @property
    def text(self) -> str:
        return self.value[1]


_NO_VALUE = object()


@dataclass(frozen=True)
class FieldError:
    """One problem with one field, e.g. ``spec.devices.priority: Invalid value: ...``."""

    type: ErrorType
    field: str
    detail: str = ""
    value: Any = _NO_VALUE

    def message(self) -> str:
        """The error text without the field path (Kubernetes' ``ErrorBody``)."""
        parts = [self.type.text]
        if self.value is not _NO_VALUE and self.type not in (
            ErrorType.REQUIRED,
            ErrorType.FORBIDDEN,
            ErrorType.TOO_LONG,
            ErrorType.TOO_MANY,
        ):
            parts.append(_render_value(self.value))
        if self.detail:
            # Details are the server's words, but some quote the input (a CEL parse
            # error shows the expression): a longer limit, still a bound.
            parts.append(shorten(self.detail, 8 * MAX_SHOWN))
        return ": ".join(parts)

    def shown_field(self) -> str:
        """The field path as messages show it: a map key in it may be user input."""
        return shorten(self.field, 4 * MAX_SHOWN)

    def __str__(self) -> str:
        return f"{self.shown_field()}: {self.message()}"


MAX_SHOWN = 256
"""Most characters of a bad value (or a name, a key) an error message repeats.

Kubernetes leaves the value out of TooLong errors; for the others it prints the value in
full, so a megabyte-sized value makes a reply of several megabytes. Here every echoed
value is cut to this many characters, followed by how much was left off."""


def shorten(text: str, limit: int = MAX_SHOWN) -> str:
    """``text``, or its first ``limit`` characters and a note of how many were left off."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...({len(text) - limit} more characters truncated)"


def _render_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(shorten(value))
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return str(value)
    return shorten(json.dumps(value, default=str, separators=(",", ":")))


def required(field: str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, field, detail)


def invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, field, detail, value)


def not_supported(field: str, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(s) for s in supported)
    return FieldError(ErrorType.NOT_SUPPORTED, field, detail, value)


def duplicate(field: str, value: Any) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, field, "", value)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, field, detail)


def too_long(field: str, max_length: int) -> FieldError:
    return FieldError(
        ErrorType.TOO_LONG, field, f"may not be more than {max_length} bytes", _NO_VALUE
    )


def too_many(field: str, actual: int, max_items: int) -> FieldError:
    return FieldError(
        ErrorType.TOO_MANY, field, f"must have at most {max_items} items (has {actual})"
    )


def type_invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.TYPE_INVALID, field, detail, value)


def at_least(path: Path | str, value: int | None, minimum: int) -> list[FieldError]:
    """An Invalid error when ``value`` is set and below ``minimum``."""
    if value is None or value >= minimum:
        return []
    return [invalid(str(path), value, f"must be greater than or equal to {minimum}")]


def in_range(path: Path | str, value: int | None, low: int, high: int) -> list[FieldError]:
    """An Invalid error when ``value`` is set and outside ``low..high``."""
    if value is None or low <= value <= high:
        return []
    return [invalid(str(path), value, f"must be between {low} and {high}, inclusive")]


NameRule = Callable[[str], list[str]]
"""A name rule of ``api.names``: the problems with a value, as plain strings."""


def invalid_each(path: Path | str, value: Any, problems: Iterable[str]) -> list[FieldError]:
    """One Invalid error at ``path`` showing ``value`` for each of ``problems`` (what a name
    rule found; the value shown may be the whole of what the rule checked a part of)."""
    return [invalid(str(path), value, problem) for problem in problems]


def required_name(
    path: Path | str,
    value: str | None,
    rule: NameRule,
    detail: str = "",
    *,
    max_length: int | None = None,
) -> list[FieldError]:
    """A value that must be set and follow ``rule``: Required (with ``detail``) when it is
    empty, Too long (and nothing more) when longer than ``max_length``, else an Invalid
    error for each problem the rule finds."""
    if not value:
        return [required(str(path), detail)]
    if max_length is not None and len(value) > max_length:
        return [too_long(str(path), max_length)]
    return invalid_each(path, value, rule(value))


class Path:
    """A field path under construction: ``Path("spec").child("devices").index(0)``."""

    __slots__ = ("_text",)

    def __init__(self, text: str = "") -> None:
        self._text = text

    def child(self, name: str) -> Path:
        return Path(f"{self._text}.{name}" if self._text else name)

    def index(self, i: int) -> Path:
        return Path(f"{self._text}[{i}]")

    def key(self, k: str) -> Path:
        return Path(f"{self._text}[{k}]")

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Path({self._text!r})"

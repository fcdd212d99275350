"""The errors of the CEL layer: compile (with a position), evaluation, and cost."""

from __future__ import annotations

import re


class CELError(Exception):
    """Base of everything this package raises about an expression."""


class CompileError(CELError):
    """The expression does not parse, does not type-check, or is not allowed.

    ``line`` and ``column`` are 1-based; ``offset`` is the 0-based code-point offset into the
    expression. They are None when the problem is the whole expression (e.g. its result type).
    """

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.offset = offset

    def copy(self) -> CompileError:
        """A new exception with the same content, for raising a cached error again (raising
        one exception object repeatedly would keep extending its traceback)."""
        return CompileError(self.message, line=self.line, column=self.column, offset=self.offset)

    @property
    def position(self) -> tuple[int, int] | None:
        if self.line is None or self.column is None:
            return None
        return self.line, self.column


class CostLimitError(CompileError):
    """The estimated cost of the expression is above the limit."""

    def __init__(self, estimated: int, limit: int) -> None:
        super().__init__(
            f"estimated cost {estimated} exceeds the limit of {limit}: too complex, exceeds cost limit"
        )
        self.estimated = estimated
        self.limit = limit


class EvaluationError(CELError):
    """Evaluation failed: missing key, wrong type, bad argument. Distinct from ``False``."""


class RuntimeLimitError(EvaluationError):
    """Evaluation was cut off because it exceeded the run-time budget."""


# -- turning the library's messages into ours -------------------------------------------------

_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_NO_SUCH_KEY = re.compile(r'Key not found in map : "(.*)"$', re.S)
_LOCATION = re.compile(r"<input>:(-?\d+):(-?\d+): ")

ERROR_KEY_PREFIX = "@error: "
"""Rewritten programs raise their own errors by looking up ``@error: <message>`` in an empty map."""

OPTIONAL_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check"
    " with has() for optional fields"
)


def runtime_message(raw: str) -> str:
    """The library's runtime error text, in the words Kubernetes uses where they differ."""
    text = _STATUS_PREFIX.sub("", raw.strip())
    m = _NO_SUCH_KEY.search(text)
    if m:
        key = m.group(1)
        if key.startswith(ERROR_KEY_PREFIX):
            return key[len(ERROR_KEY_PREFIX) :]
        return f"no such key: {key}{OPTIONAL_HINT}"
    if text.startswith("No matching overloads found : "):
        return "no such overload: " + text[len("No matching overloads found : ") :]
    return text


def compile_error(raw: str, expression: str) -> CompileError:
    """A CompileError from the library's compile failure text, with the first position in it."""
    text = _STATUS_PREFIX.sub("", raw.strip())
    text = re.sub(r" \[[A-Z_]+\]$", "", text)
    line: int | None = None
    column: int | None = None
    offset: int | None = None
    m = _LOCATION.search(text)
    if m and int(m.group(1)) > 0:
        line, column = int(m.group(1)), int(m.group(2))
        lines = expression.split("\n")
        if line <= len(lines):
            offset = sum(len(x) + 1 for x in lines[: line - 1]) + column - 1
    message = text.replace("ERROR: <input>:", "ERROR: <input>:", 1)
    message = re.sub(r"\nERROR: <input>:-1:-1: .*$", "", message, flags=re.S)
    return CompileError(message, line=line, column=column, offset=offset)

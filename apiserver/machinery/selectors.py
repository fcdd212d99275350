"""Label and field selectors, parsed from query strings and matched against objects.

Grammar as in Kubernetes' ``labels.Parse`` and ``fields.ParseSelector``: comma-separated
requirements that must all hold. Labels support ``=``, ``==``, ``!=``, ``in``, ``notin``,
existence (``k``, ``!k``) and integer ``>``/``<``; fields support ``=``, ``==``, ``!=`` with
backslash escapes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..api import label_value_errors, qualified_name_errors
from . import errors

FieldGetter = Callable[[dict[str, Any]], str | None]


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", ">", "<"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if not present:
            return False
        try:
            actual = int(value or "")
        except ValueError:
            return False
        bound = int(self.values[0])
        return actual > bound if self.op == ">" else actual < bound


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


_TOKEN = re.compile(r"\s*(!=|==|=|!|>|<|\(|\)|,|[^\s!=<>(),]+)")


_OPERATOR_TOKENS = ("!=", "==", "=", "!", ">", "<", "(", ")", ",")


def parse_label_selector(text: str) -> LabelSelector:
    tokens = [m.group(1) for m in _TOKEN.finditer(text or "")]
    reqs: list[LabelRequirement] = []
    i = 0
    while i < len(tokens):
        requirement, i = _label_requirement(tokens, i)
        reqs.append(requirement)
        if i < len(tokens):
            if tokens[i] != ",":
                raise _fail(f"found '{tokens[i]}', expected: ','")
            i += 1
            if i >= len(tokens):
                raise _fail("found 'EOS', expected: identifier")
    return LabelSelector(tuple(reqs))


def _fail(why: str) -> errors.StatusError:
    return errors.bad_request(f"unable to parse requirement: {why}")


def _word(tokens: list[str], at: int, what: str) -> str:
    """The identifier or value at ``at``; an operator or the end there is an error."""
    if at >= len(tokens) or tokens[at] in _OPERATOR_TOKENS:
        raise _fail(f"found '{tokens[at] if at < len(tokens) else 'EOS'}', expected: {what}")
    return tokens[at]


def _label_requirement(tokens: list[str], i: int) -> tuple[LabelRequirement, int]:
    """The requirement that starts at token ``i``, and the index of the token after it."""
    if tokens[i] == "!":
        key = _word(tokens, i + 1, "identifier after '!'")
        return LabelRequirement(_check_key(key, _fail), "!"), i + 2
    key = _check_key(_word(tokens, i, "identifier"), _fail)
    i += 1
    if i >= len(tokens) or tokens[i] == ",":
        return LabelRequirement(key, "exists"), i
    if tokens[i] in ("=", "==", "!="):
        op = "!=" if tokens[i] == "!=" else "="
        value = ""
        if i + 1 < len(tokens) and tokens[i + 1] != ",":
            value = _word(tokens, i + 1, "value")
            i += 1
        return LabelRequirement(key, op, (_check_value(value, _fail),)), i + 1
    if tokens[i] in (">", "<"):
        value = _word(tokens, i + 1, "integer value")
        if not re.fullmatch(r"-?\d+", value):
            raise _fail(f"for 'Gt', 'Lt' operators, the value must be an integer: {value!r}")
        return LabelRequirement(key, tokens[i], (value,)), i + 2
    if tokens[i] in ("in", "notin"):
        values, after = _value_set(tokens, i + 1)
        return LabelRequirement(key, tokens[i], values), after
    raise _fail(f"found '{tokens[i]}', expected: in, notin, =, ==, !=, gt, lt")


def _value_set(tokens: list[str], i: int) -> tuple[tuple[str, ...], int]:
    """The parenthesised values of ``in``/``notin`` from the ``(`` at token ``i``, and the
    index of the token after the ``)``."""
    if i >= len(tokens) or tokens[i] != "(":
        raise _fail(f"found '{tokens[i] if i < len(tokens) else 'EOS'}', expected: '('")
    i += 1
    values: list[str] = []
    want_value = True  # "(,", ",," and ",)" stand for the empty value
    while i < len(tokens) and tokens[i] != ")":
        if tokens[i] == ",":
            if want_value:
                values.append("")
            want_value = True
        elif want_value:
            values.append(_check_value(tokens[i], _fail))
            want_value = False
        else:
            raise _fail(f"found '{tokens[i]}', expected: ',' or ')'")
        i += 1
    if i >= len(tokens):
        raise _fail("found 'EOS', expected: ')'")
    if want_value and values:
        values.append("")
    return tuple(values) or ("",), i + 1


def _check_key(key: str, fail: Callable[[str], errors.StatusError]) -> str:
    problems = qualified_name_errors(key)
    if problems:
        raise fail(f"invalid label key {key!r}: {'; '.join(problems)}")
    return key


def _check_value(value: str, fail: Callable[[str], errors.StatusError]) -> str:
    problems = label_value_errors(value)
    if problems:
        raise fail(f"invalid label value: {value!r}: {'; '.join(problems)}")
    return value


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    equal: bool


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: dict[str, Any], getters: Mapping[str, FieldGetter]) -> bool:
        for req in self.requirements:
            actual = getters[req.field](obj) or ""
            if (actual == req.value) != req.equal:
                return False
        return True

    def exact(self, field_name: str) -> str | None:
        """The value a requirement pins the field to (``field=value``), if any."""
        for req in self.requirements:
            if req.field == field_name and req.equal:
                return req.value
        return None

    @property
    def empty(self) -> bool:
        return not self.requirements


def parse_field_selector(text: str, supported: Mapping[str, FieldGetter]) -> FieldSelector:
    reqs: list[FieldRequirement] = []
    for term in _split_unescaped(text or "", ","):
        if not term.strip():
            continue
        parsed = _split_requirement(term)
        if parsed is None:
            raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        name, value, equal = parsed
        if name not in supported:
            raise errors.bad_request(f"field label not supported: {name}")
        reqs.append(FieldRequirement(name, value, equal))
    return FieldSelector(tuple(reqs))


def _split_requirement(term: str) -> tuple[str, str, bool] | None:
    """``field!=value``, ``field==value`` or ``field=value`` as (field, value, equal).

    The leftmost operator splits the term, as in Kubernetes' ``splitTerm``.
    """
    for at in range(len(term)):
        for op, equal in (("!=", False), ("==", True), ("=", True)):
            if term.startswith(op, at):
                return term[:at].strip(), _unescape(term[at + len(op) :]), equal
    return None


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, escaped = [], [], False
    for ch in text:
        if escaped:
            cur.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if escaped:
        cur.append("\\")  # a dangling backslash: left for _unescape to reject
    parts.append("".join(cur))
    return parts


def _unescape(value: str) -> str:
    """A field selector value without its escapes; 400 on what Kubernetes rejects."""
    out, escaped = [], False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise errors.bad_request(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise errors.bad_request(f"invalid field selector: unescaped {ch!r} in value")
        else:
            out.append(ch)
    if escaped:
        raise errors.bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)

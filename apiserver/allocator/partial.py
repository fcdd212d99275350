"""Three-valued evaluation of a KEP-5254 constraint over a partial set of devices.

A CEL constraint is evaluated only on the complete set of devices (it is not monotonic).
But before the set is complete, some expressions can already be shown false for every
completion: ``max - min == 3`` once two chosen ids are 5 apart, "each device has two
neighbours" once a chosen device has no neighbour among the others and only one device is
left to choose. ``refutes`` evaluates the checked syntax tree over the chosen devices plus
``missing`` devices of unknown value, in a three-valued logic: every value is concrete,
``UNKNOWN``, a ``Span`` of integers, or a ``PList`` (a list with some elements known,
some unknown, some possibly absent). It answers True only when the expression is false for
every possible completion, so a search may drop the partial set without losing any answer.

Soundness rests on over-approximation: each operation returns a value that covers every
concrete result it could have (an unknown operand gives ``UNKNOWN`` unless the result is
decided regardless, as ``false && x``); anything not modelled here (most functions,
division, maps iterated, two-variable comprehensions) is ``UNKNOWN``; an error at run time
is itself a rejection, so treating a would-be error as ``UNKNOWN`` never drops an answer.
Work is capped (``STEPS``) and running out is ``UNKNOWN``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..cel import ast
from ..cel.environment import environment

STEPS = 20_000
"""Nodes visited in one evaluation before it gives up (as UNKNOWN)."""


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


@dataclass(frozen=True, slots=True)
class Span:
    """An integer known to lie in [lo, hi] (bounds may be infinite)."""

    lo: float
    hi: float


@dataclass(frozen=True, slots=True)
class PList:
    items: tuple[Any, ...]
    """Elements certainly present, in order (values may be UNKNOWN)."""
    maybe: int = 0
    """Elements that may or may not be present, of unknown value, after ``items``."""


class _OutOfSteps(Exception):
    pass


@cache
def checked_tree(expression: str) -> ast.Expr | None:
    """The expression's checked tree before any rewrite; None if it does not compile."""
    try:
        return ast.decode_checked(environment("devices").compile(expression).serialize()).expr
    except (RuntimeError, ValueError):
        return None


def refutes(expression: str, chosen: Sequence[Any], missing: int) -> bool:
    """True when the constraint is false for every set made of ``chosen`` (CEL device
    values, in order) followed by ``missing`` more devices."""
    tree = checked_tree(expression)
    if tree is None:
        return False
    devices = PList((*chosen, *([UNKNOWN] * missing)))
    try:
        return _Evaluator().eval(tree, {"devices": devices}) is False
    except _OutOfSteps:
        return False


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _bounds(v: Any) -> tuple[float, float] | None:
    if _is_num(v):
        return (v, v)
    if isinstance(v, Span):
        return (v.lo, v.hi)
    return None


def _span(lo: float, hi: float) -> Any:
    if lo == hi and not math.isinf(lo):
        return int(lo) if float(lo).is_integer() else lo
    return Span(lo, hi)


def _equal(a: Any, b: Any) -> bool:
    """CEL equality of concrete values: a bool never equals a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _concrete(v: Any) -> bool:
    if v is UNKNOWN or isinstance(v, Span):
        return False
    if isinstance(v, PList):
        return v.maybe == 0 and all(_concrete(x) for x in v.items)
    return True


def _plain(v: Any) -> Any:
    """A concrete value as Python data (lists for PLists)."""
    if isinstance(v, PList):
        return [_plain(x) for x in v.items]
    return v


def _same(a: Any, b: Any) -> bool:
    return a is b or (_concrete(a) and _concrete(b) and _equal(_plain(a), _plain(b)))


def _join(a: Any, b: Any) -> Any:
    """A value covering both ``a`` and ``b``."""
    if a is b:
        return a
    if isinstance(a, PList) and isinstance(b, PList):
        short, long = (a, b) if len(a.items) <= len(b.items) else (b, a)
        prefix = all(_same(x, y) for x, y in zip(short.items, long.items, strict=False))
        if prefix and short.maybe <= long.maybe + (len(long.items) - len(short.items)):
            extra = len(long.items) - len(short.items) + long.maybe
            return PList(short.items, max(short.maybe, extra))
        total = max(len(a.items) + a.maybe, len(b.items) + b.maybe)
        present = min(len(a.items), len(b.items))
        return PList((UNKNOWN,) * present, total - present)
    ab, bb = _bounds(a), _bounds(b)
    if ab is not None and bb is not None:
        return _span(min(ab[0], bb[0]), max(ab[1], bb[1]))
    if _concrete(a) and _concrete(b) and _equal(_plain(a), _plain(b)):
        return a
    return UNKNOWN


class _Evaluator:
    def __init__(self) -> None:
        self.steps = 0

    def eval(self, node: ast.Expr, env: dict[str, Any]) -> Any:
        self.steps += 1
        if self.steps > STEPS:
            raise _OutOfSteps
        if isinstance(node, ast.Const):
            return node.value if node.kind in ("bool", "int", "double", "string") else UNKNOWN
        if isinstance(node, ast.Ident):
            return env.get(node.name, UNKNOWN)
        if isinstance(node, ast.Select):
            operand = self.eval(node.operand, env)
            if not isinstance(operand, dict):
                return UNKNOWN
            if node.test_only:
                return node.field in operand
            return operand.get(node.field, UNKNOWN)
        if isinstance(node, ast.CreateList):
            if node.optional_indices:
                return UNKNOWN
            return PList(tuple(self.eval(e, env) for e in node.elements))
        if isinstance(node, ast.Comprehension):
            return self._comprehension(node, env)
        if isinstance(node, ast.Call):
            return self._call(node, env)
        return UNKNOWN

    def _comprehension(self, node: ast.Comprehension, env: dict[str, Any]) -> Any:
        if node.iter_var2:
            return UNKNOWN
        source = self.eval(node.iter_range, env)
        if not isinstance(source, PList):
            return UNKNOWN
        scope = dict(env)
        scope[node.accu_var] = self.eval(node.accu_init, scope)
        for item in source.items:
            scope[node.iter_var] = item
            go = self.eval(node.loop_condition, scope)
            if go is False:
                break
            if go is not True:
                return UNKNOWN
            scope[node.accu_var] = self.eval(node.loop_step, scope)
        else:
            for _ in range(source.maybe):
                scope[node.iter_var] = UNKNOWN
                go = self.eval(node.loop_condition, scope)
                if go is False:
                    break
                if go is not True:
                    return UNKNOWN
                before = scope[node.accu_var]
                scope[node.accu_var] = _join(before, self.eval(node.loop_step, scope))
        return self.eval(node.result, scope)

    def _call(self, node: ast.Call, env: dict[str, Any]) -> Any:
        name = node.function
        args = node.args
        if name == "_&&_" or name == "_||_":
            stop = name == "_||_"  # the value that decides the result alone
            seen_unknown = False
            for arg in args:
                value = self.eval(arg, env)
                if value is stop:
                    return stop
                if value is not (not stop):
                    seen_unknown = True
            return UNKNOWN if seen_unknown else (not stop)
        if name == "_?_:_":
            cond = self.eval(args[0], env)
            if cond is True:
                return self.eval(args[1], env)
            if cond is False:
                return self.eval(args[2], env)
            return _join(self.eval(args[1], env), self.eval(args[2], env))
        values = [self.eval(a, env) for a in args]
        target = self.eval(node.target, env) if node.target is not None else None
        if name == "!_":
            return (not values[0]) if isinstance(values[0], bool) else UNKNOWN
        if name == "@not_strictly_false":
            return values[0] is not False
        if name in ("_==_", "_!=_"):
            same = self._equals(values[0], values[1])
            if same is UNKNOWN or name == "_==_":
                return same
            return not same
        if name in ("_<_", "_<=_", "_>_", "_>=_"):
            return _compare(name, values[0], values[1])
        if name in ("_+_", "_-_"):
            return _arith(name, values[0], values[1])
        if name == "_[_]":
            return _index(values[0], values[1])
        if name == "size":
            subject = target if target is not None else values[0]
            return _size(subject)
        if name in ("max", "min", "sum") and target is not None and not values:
            return _aggregate(name, target)
        return UNKNOWN

    def _equals(self, a: Any, b: Any) -> Any:
        ab, bb = _bounds(a), _bounds(b)
        if ab is not None and bb is not None and (isinstance(a, Span) or isinstance(b, Span)):
            if ab[1] < bb[0] or bb[1] < ab[0]:
                return False
            return UNKNOWN
        if _concrete(a) and _concrete(b):
            return _equal(_plain(a), _plain(b))
        return UNKNOWN


def _compare(name: str, a: Any, b: Any) -> Any:
    ab, bb = _bounds(a), _bounds(b)
    if ab is None or bb is None:
        if isinstance(a, str) and isinstance(b, str):
            return {"_<_": a < b, "_<=_": a <= b, "_>_": a > b, "_>=_": a >= b}[name]
        return UNKNOWN
    (alo, ahi), (blo, bhi) = ab, bb
    if name == "_<_":
        return True if ahi < blo else False if alo >= bhi else UNKNOWN
    if name == "_<=_":
        return True if ahi <= blo else False if alo > bhi else UNKNOWN
    if name == "_>_":
        return True if alo > bhi else False if ahi <= blo else UNKNOWN
    return True if alo >= bhi else False if ahi < blo else UNKNOWN


def _arith(name: str, a: Any, b: Any) -> Any:
    if name == "_+_" and isinstance(a, PList) and isinstance(b, PList):
        if a.maybe == 0:
            return PList(a.items + b.items, b.maybe)
        return PList(a.items, a.maybe + len(b.items) + b.maybe)
    if name == "_+_" and isinstance(a, str) and isinstance(b, str):
        return a + b
    ab, bb = _bounds(a), _bounds(b)
    if ab is None or bb is None or isinstance(a, float) or isinstance(b, float):
        return UNKNOWN
    if name == "_+_":
        return _span(ab[0] + bb[0], ab[1] + bb[1])
    return _span(ab[0] - bb[1], ab[1] - bb[0])


def _index(subject: Any, key: Any) -> Any:
    if isinstance(subject, dict) and _concrete(key) and not isinstance(key, PList):
        return subject.get(key, UNKNOWN) if isinstance(key, str) else UNKNOWN
    if isinstance(subject, PList) and _is_num(key) and 0 <= key < len(subject.items):
        return subject.items[int(key)]
    return UNKNOWN


def _size(subject: Any) -> Any:
    if isinstance(subject, PList):
        return _span(len(subject.items), len(subject.items) + subject.maybe)
    if isinstance(subject, str | dict):
        return len(subject)
    return UNKNOWN


def _aggregate(name: str, subject: Any) -> Any:
    if not isinstance(subject, PList) or not subject.items:
        return UNKNOWN
    known = [x for x in subject.items if x is not UNKNOWN]
    if any(not isinstance(x, int) or isinstance(x, bool) for x in known):
        return UNKNOWN
    partial = len(known) < len(subject.items) or subject.maybe > 0
    if name == "sum":
        return UNKNOWN if partial else sum(known)
    if not known:
        return UNKNOWN
    if name == "max":
        return Span(max(known), math.inf) if partial else max(known)
    return Span(-math.inf, min(known)) if partial else min(known)

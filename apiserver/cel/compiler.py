"""Compile once, cache by expression text, evaluate many times.

``compile_expression`` runs the whole pipeline for one expression: the library parses and
type-checks it; ``checks`` adds upstream's other compile-time checks; ``cost`` estimates it;
``rewrite`` makes the Kubernetes functions native; the library plans the rewritten tree. The
result (or the CompileError) is cached in a bounded LRU keyed by the kind and the text.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from cel_expr_python import cel

from . import ast, checks, cost, rewrite
from .environment import environment
from .errors import (
    CompileError,
    CostLimitError,
    EvaluationError,
    RuntimeLimitError,
    compile_error,
    runtime_message,
)

MAX_EXPRESSION_LENGTH = 10 * 1024
"""CELSelectorExpressionMaxLength."""

MAX_COST = 1_000_000
"""CELSelectorExpressionMaxCost: the limit of the estimated cost at validation."""

RUNTIME_ITERATION_LIMIT = 10_000
"""The library stops an evaluation after this many comprehension iterations in total."""

CACHE_SIZE = 1024


class Kind(Enum):
    """What an expression looks at: one device (selectors) or a set of them (constraints)."""

    SELECTOR = "device"
    CONSTRAINT = "devices"


@dataclass(frozen=True, eq=False)
class Program:
    """A compiled expression, ready to evaluate; immutable and safe to share."""

    expression: str
    kind: Kind
    estimated_cost: int
    _planned: Any = field(repr=False)
    _env: Any = field(repr=False)
    calls_python: bool = False
    """True when the program calls a Python helper (non-literal ``quantity()``/``semver()``
    or quantity arithmetic): those calls cost memory in the library, see ``environment``."""


class _Cache:
    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[tuple[Kind, str], Program | CompileError] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Kind, str]) -> Program | CompileError | None:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key: tuple[Kind, str], item: Program | CompileError) -> None:
        with self._lock:
            self._items[key] = item
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


cache = _Cache(CACHE_SIZE)

_HELPERS = frozenset({"@quantity", "@semver", "@quantityAdd", "@quantitySub"})


def _regex_problem(pattern: str) -> str | None:
    checker = _regex_checker()
    result = checker.eval(data={"device": {"p": pattern}})
    if result.type() == cel.Type.ERROR:
        return runtime_message(str(result.value())).removeprefix("invalid regular expression: ")
    return None


@functools.cache
def _regex_checker() -> Any:
    """A program that compiles a pattern with the library's own regular expressions (RE2)."""
    return environment(Kind.SELECTOR.value).compile("''.matches(device.p)")


def _build(expression: str, kind: Kind) -> Program:
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CompileError(
            f"expression is too long: {len(expression)} characters, at most "
            f"{MAX_EXPRESSION_LENGTH} are allowed"
        )
    env = environment(kind.value)
    try:
        checked = env.compile(expression)
    except RuntimeError as e:
        raise compile_error(str(e), expression) from None
    result_type = checked.return_type()
    if result_type not in (cel.Type.BOOL, cel.Type.DYN):
        raise CompileError(
            "must evaluate to bool or the unknown type, not " + _type_name(result_type.name())
        )
    tree = ast.decode_checked(checked.serialize())
    if result_type == cel.Type.DYN:
        static = checks.static_type(tree, kind.value)
        if static is not None and static != "bool":
            raise CompileError("must evaluate to bool or the unknown type, not " + static)
    checks.check(tree, kind.value, _regex_problem)
    checks.check_operators(tree, kind.value)
    estimated = cost.estimate(tree)
    rewrite.rewrite(tree)
    calls_python = any(
        isinstance(n, ast.Call) and n.function in _HELPERS for n in ast.walk(tree.expr)
    )
    try:
        planned = env.deserialize(ast.encode_checked(tree))
    except RuntimeError as e:
        text = runtime_message(str(e))
        if "recursion" in text:
            raise CompileError("expression is too deeply nested: " + text) from None
        raise CompileError("expression cannot be planned: " + text) from None
    return Program(expression, kind, estimated, planned, env, calls_python)


def _type_name(name: str) -> str:
    return name.lower().replace("<", "(").replace(">", ")")


def compile_expression(
    expression: str, kind: Kind = Kind.SELECTOR, *, cost_limit: int | None = MAX_COST
) -> Program:
    """The compiled program of ``expression``, from the cache when possible.

    Raises CompileError (with the position when there is one), or CostLimitError when the
    estimated cost is above ``cost_limit`` (None: no limit, for expressions already stored).
    """
    key = (kind, expression)
    item = cache.get(key)
    if item is None:
        try:
            item = _build(expression, kind)
        except CompileError as e:
            item = e
        cache.put(key, item)
    if isinstance(item, CompileError):
        raise item.copy()
    if cost_limit is not None and item.estimated_cost > cost_limit:
        raise CostLimitError(item.estimated_cost, cost_limit)
    return item


_ITERATIONS = "Iteration budget exceeded"


def evaluate(program: Program, subject: Any) -> bool:
    """Evaluate on a device value (selector) or a list of them (constraint).

    Returns the boolean result. Raises EvaluationError for a runtime error (missing key,
    wrong type, non-boolean result) and RuntimeLimitError when the evaluation was cut off.
    """
    # A fresh activation per evaluation: it is faster than ``eval(data=...)``, and an
    # activation keeps everything its evaluations allocate until it is dropped.
    try:
        result = program._planned.eval(program._env.Activation({program.kind.value: subject}))
    except RuntimeError as e:
        text = str(e)
        if _ITERATIONS in text:
            raise RuntimeLimitError(
                f"actual cost limit exceeded: more than {RUNTIME_ITERATION_LIMIT} "
                "comprehension iterations"
            ) from None
        raise EvaluationError(runtime_message(text)) from None
    value = result.value()
    if value is True or value is False:
        return bool(value)
    result_type = result.type()
    if result_type == cel.Type.ERROR:
        raise EvaluationError(runtime_message(str(value)))
    raise EvaluationError(
        f"CEL result of type {_type_name(result_type.name())} could not be converted to bool"
    )

"""Estimated cost of a checked expression, checked against the Kubernetes limit.

The library has no cost estimator, so this is our own, modelled on cel-go's: one unit per
operation, a tenth of a unit per character of a string an operation traverses, comprehension
bodies multiplied by the (worst-case) size of what they iterate. Sizes come from the same hints
Kubernetes uses for DRA: at most 32 devices in ``devices``, 32 domains and 32 attributes per
device, strings of at most 64 characters (63 for the driver), list attributes of at most 48
values. A literal has its own size; a ``lists.range(n)`` with a non-constant ``n`` is unbounded.

The result is an upper bound on the work of one evaluation, not cel-go's exact number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import ast as A

MAX_DEVICES = 32
"""The longest ``devices`` list a constraint sees (AllocationResultsMaxSize)."""

MAX_MAP_ENTRIES = 32
MAX_STRING = 64
MAX_DRIVER = 63
MAX_LIST_VALUES = 48
UNBOUNDED = 1 << 63
COST_CAP = (1 << 64) - 1


@dataclass(frozen=True)
class Shape:
    """What is known of a value: an upper bound of its size and of its parts' shapes."""

    size: int = 1
    elem: Shape | None = None  # list elements, map values
    key: Shape | None = None  # map keys
    device: bool = False

    def element(self) -> Shape:
        return self.elem if self.elem is not None else VALUE

    def join(self, other: Shape) -> Shape:
        elem = self.elem.join(other.elem) if self.elem and other.elem else self.elem or other.elem
        key = self.key.join(other.key) if self.key and other.key else self.key or other.key
        return Shape(max(self.size, other.size), elem, key, self.device and other.device)


SCALAR = Shape(1)
VALUE = Shape(MAX_STRING, elem=Shape(MAX_STRING))
"""An attribute value: a string of at most 64 characters or a list of at most 48 of them."""
QUANTITY = Shape(1)
ATTRIBUTES = Shape(
    MAX_MAP_ENTRIES,
    key=Shape(MAX_DRIVER),
    elem=Shape(MAX_MAP_ENTRIES, key=Shape(32), elem=VALUE),
)
CAPACITY = Shape(
    MAX_MAP_ENTRIES,
    key=Shape(MAX_DRIVER),
    elem=Shape(MAX_MAP_ENTRIES, key=Shape(32), elem=QUANTITY),
)
DEVICE = Shape(4, device=True)
DEVICES = Shape(MAX_DEVICES, elem=DEVICE)
_DEVICE_FIELDS = {
    "driver": Shape(MAX_DRIVER),
    "attributes": ATTRIBUTES,
    "capacity": CAPACITY,
    "allowMultipleAllocations": SCALAR,
}

VARIABLES = {"device": DEVICE, "devices": DEVICES}


def _traverse(size: int) -> int:
    """Cost of reading a string of ``size`` characters."""
    return math.ceil(size * 0.1)


def _mul(a: int, b: int) -> int:
    return min(a * b, COST_CAP)


@dataclass(frozen=True)
class Estimate:
    cost: int
    shape: Shape


class Estimator:
    def __init__(self, checked: A.CheckedAst) -> None:
        self.checked = checked

    def estimate(self, node: A.Expr, scope: dict[str, Shape]) -> Estimate:
        method = getattr(self, "_" + type(node).__name__)
        result: Estimate = method(node, scope)
        return Estimate(min(result.cost, COST_CAP), result.shape)

    def _Const(self, node: A.Const, scope: dict[str, Shape]) -> Estimate:
        if isinstance(node.value, str | bytes):
            return Estimate(0, Shape(len(node.value)))
        return Estimate(0, SCALAR)

    def _Ident(self, node: A.Ident, scope: dict[str, Shape]) -> Estimate:
        return Estimate(1, scope.get(node.name, VALUE))

    def _Select(self, node: A.Select, scope: dict[str, Shape]) -> Estimate:
        operand = self.estimate(node.operand, scope)
        if node.test_only:
            return Estimate(operand.cost + 1, SCALAR)
        return Estimate(operand.cost + 1, _field(operand.shape, node.field))

    def _CreateList(self, node: A.CreateList, scope: dict[str, Shape]) -> Estimate:
        parts = [self.estimate(e, scope) for e in node.elements]
        elem: Shape | None = None
        for p in parts:
            elem = p.shape if elem is None else elem.join(p.shape)
        return Estimate(10 + sum(p.cost for p in parts), Shape(len(parts), elem=elem))

    def _CreateStruct(self, node: A.CreateStruct, scope: dict[str, Shape]) -> Estimate:
        cost = 30 if not node.message_name else 40
        key: Shape | None = None
        elem: Shape | None = None
        for e in node.entries:
            if isinstance(e.key, A.Expr):
                k = self.estimate(e.key, scope)
                cost += k.cost
                key = k.shape if key is None else key.join(k.shape)
            v = self.estimate(e.value, scope)
            cost += v.cost
            elem = v.shape if elem is None else elem.join(v.shape)
        return Estimate(cost, Shape(len(node.entries), elem=elem, key=key))

    def _Comprehension(self, node: A.Comprehension, scope: dict[str, Shape]) -> Estimate:
        rng = self.estimate(node.iter_range, scope)
        init = self.estimate(node.accu_init, scope)
        n = rng.shape.size
        inner = dict(scope)
        if rng.shape.key is not None:  # a map: keys, then values
            first, second = rng.shape.key, rng.shape.element()
        else:  # a list: the element, or the index and the element
            first, second = rng.shape.element(), rng.shape.element()
            if node.iter_var2:
                first = SCALAR
        inner[node.iter_var] = first
        if node.iter_var2:
            inner[node.iter_var2] = second
        inner[node.accu_var] = init.shape
        grown = self.estimate(node.loop_step, inner).shape
        growth = max(0, grown.size - init.shape.size)
        accu = Shape(
            min(init.shape.size + _mul(n, growth), UNBOUNDED),
            elem=grown.elem or init.shape.elem,
            key=grown.key or init.shape.key,
            device=init.shape.device and grown.device,
        )
        inner[node.accu_var] = accu
        step = self.estimate(node.loop_step, inner)
        condition = self.estimate(node.loop_condition, inner)
        after = dict(scope)
        after[node.accu_var] = accu
        result = self.estimate(node.result, after)
        cost = rng.cost + init.cost + _mul(n, step.cost + condition.cost) + result.cost
        return Estimate(cost, result.shape)

    def _Call(self, node: A.Call, scope: dict[str, Shape]) -> Estimate:
        target = self.estimate(node.target, scope) if node.target is not None else None
        args = [self.estimate(a, scope) for a in node.args]
        operands = ([target] if target else []) + args
        below = sum(o.cost for o in operands)
        fn = node.function
        shapes = [o.shape for o in operands]
        if fn == "_?_:_":
            cost = args[0].cost + max(args[1].cost, args[2].cost)
            return Estimate(cost, args[1].shape.join(args[2].shape))
        if fn in ("_&&_", "_||_", "!_", "@not_strictly_false"):
            return Estimate(below, SCALAR)
        own, shape = _call(fn, node, shapes, args)
        return Estimate(below + own, shape)


def _field(shape: Shape, name: str) -> Shape:
    if shape.device:
        return _DEVICE_FIELDS.get(name, VALUE)
    return shape.element()


_SAME_SHAPE = frozenset({"lowerAscii", "upperAscii", "trim", "reverse", "substring", "slice"})
_STRING_SCAN = frozenset(
    {"contains", "startsWith", "endsWith", "charAt", "indexOf", "lastIndexOf", "isQuantity"}
)
_LINEAR = frozenset({"max", "min", "sum", "isSorted", "distinct", "@in"})
# The functions _text_call prices: the string scans and builders, and the parsers of text.
_TEXT = (
    _STRING_SCAN
    | _SAME_SHAPE
    | {
        "matches",
        "replace",
        "split",
        "join",
        "quote",
        "strings.quote",
        "format",
        "quantity",
        "semver",
        "isSemver",
    }
)


def _call(fn: str, node: A.Call, shapes: list[Shape], args: list[Estimate]) -> tuple[int, Shape]:
    """The call's own cost and its result's shape, from its operands' shapes."""
    first = shapes[0] if shapes else SCALAR
    total = sum(s.size for s in shapes)
    if fn in ("_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"):
        return 1 + _traverse(min(s.size for s in shapes)), SCALAR
    if fn == "_+_":
        if first.size > 1 or first.elem is not None:
            merged = first.join(shapes[1]) if len(shapes) > 1 else first
            size = min(total, UNBOUNDED)
            return 1 + _traverse(size), Shape(size, elem=merged.elem, key=merged.key)
        return 1, SCALAR
    if fn in ("_[_]", "_[?_]"):
        if first.device and len(args) > 1 and isinstance(node.args[1], A.Const):
            return 1, _field(first, str(node.args[1].value))
        return 1, first.element()
    if fn == "@in":
        container = shapes[1] if len(shapes) > 1 else first
        return (1 if container.key is not None else 1 + container.size), SCALAR
    if fn == "size":
        return 1, SCALAR
    if fn == "includes":
        # As upstream: linear in the longest list attribute, whatever the target.
        return 1 + MAX_LIST_VALUES, SCALAR
    if fn in _TEXT:
        return _text_call(fn, shapes, first, total)
    return _collection_call(fn, node, shapes, first)


def _text_call(fn: str, shapes: list[Shape], first: Shape, total: int) -> tuple[int, Shape]:
    """A string function's cost and result shape: linear in the text it scans or builds."""
    if fn == "matches":
        pattern = shapes[1].size if len(shapes) > 1 else MAX_STRING
        return 1 + _traverse(first.size) * max(1, math.ceil(pattern * 0.25)), SCALAR
    if fn in _STRING_SCAN:
        return 1 + _traverse(total), SCALAR
    if fn in _SAME_SHAPE:
        return 1 + _traverse(first.size), first
    if fn == "replace" and len(shapes) >= 3:
        size = min(first.size * max(1, shapes[2].size) + first.size, UNBOUNDED)
        return 1 + _traverse(first.size + size), Shape(size)
    if fn == "split":
        return 1 + _traverse(first.size), Shape(first.size + 1, elem=Shape(first.size))
    if fn == "join":
        sep = shapes[1].size if len(shapes) > 1 else 0
        size = min(_mul(first.size, first.element().size + sep), UNBOUNDED)
        return 1 + _traverse(size), Shape(size)
    if fn in ("quote", "strings.quote"):
        return 1 + _traverse(first.size), Shape(2 * first.size + 2)
    if fn == "format":
        size = min(first.size + _mul(shapes[1].size if len(shapes) > 1 else 0, 64), UNBOUNDED)
        return 1 + _traverse(size), Shape(size)
    if fn in ("quantity", "semver", "isSemver"):
        return 1 + _traverse(first.size), QUANTITY
    return 1, first


def _collection_call(fn: str, node: A.Call, shapes: list[Shape], first: Shape) -> tuple[int, Shape]:
    """A list, set, conversion or optional function's cost and result shape."""
    if fn in _LINEAR:
        return 1 + first.size, first.element() if fn in ("max", "min", "sum") else SCALAR
    if fn in ("sort", "@sortByAssociatedKeys"):
        n = first.size
        return 1 + _mul(n, max(1, math.ceil(math.log2(max(n, 2))))), first
    if fn == "flatten":
        size = min(_mul(first.size, first.element().size), UNBOUNDED)
        return 1 + size, Shape(size, elem=first.element().elem)
    if fn == "lists.range":
        arg = node.args[0] if node.args else None
        if isinstance(arg, A.Const) and isinstance(arg.value, int):
            n = max(0, arg.value)
            return 1 + n, Shape(n, elem=SCALAR)
        return UNBOUNDED, Shape(UNBOUNDED, elem=SCALAR)
    if fn in ("sets.contains", "sets.equivalent", "sets.intersects"):
        other = shapes[1].size if len(shapes) > 1 else 1
        return 1 + _mul(first.size, other), SCALAR
    if fn in ("string", "bytes"):
        return 1 + _traverse(first.size), Shape(max(first.size, 32))
    if fn in ("int", "uint", "double", "bool", "duration", "timestamp"):
        return 1 + _traverse(first.size), SCALAR
    if fn in ("dyn", "optional.of", "optional.ofNonZeroValue", "value"):
        return 1, first
    if fn in ("orValue", "or"):
        return 1, first.join(shapes[1]) if len(shapes) > 1 else first
    return 1, first


def estimate(checked: A.CheckedAst) -> int:
    """The estimated cost of one evaluation of the expression."""
    return Estimator(checked).estimate(checked.expr, dict(VARIABLES)).cost

"""Turn the Kubernetes functions of a checked expression into native CEL.

The library keeps alive every value handed to a Python function, so a program that called
Python for ``quantity()``, ``compareTo`` or ``max()`` would grow the process on every
evaluation, and it would be slower. Instead, each call is replaced by native CEL over the
value forms of ``quantity`` and ``semver`` (maps with an order-preserving key ``@k``):

* literals are parsed once here: ``quantity('10Gi')`` becomes a constant;
* ``a.compareTo(b)`` becomes ``a['@k'] < b['@k'] ? -1 : (a['@k'] > b['@k'] ? 1 : 0)``, and
  ``isGreaterThan``/``isLessThan``/``sign``/``major``… are key or field look-ups;
* ``isQuantity``/``isSemver`` of a non-literal become ``matches`` with the grammar;
* ``max``/``min``/``sum``/``isSorted`` become comprehensions (folds);
* ``x.includes(v)`` (list-type attributes) becomes ``v in x`` for a list, ``x == v`` else;
* ``device.attributes[domain]`` and ``device.capacity[domain]`` become optional look-ups with
  an empty map as default, so an unknown domain is an empty map as upstream.

Only parsing a non-literal quantity or version and quantity ``add``/``sub`` still call Python.
Errors raised by the rewritten code look up ``'@error: <message>'`` in an empty map; ``errors``
turns that back into ``<message>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from . import ast as A
from . import environment as envmod
from . import quantity, semver
from .cost import MAX_LIST_VALUES
from .errors import ERROR_KEY_PREFIX

_DOMAIN_MAPS = ("attributes", "capacity")
_CHEAP_CALLS = frozenset({"_[_]", "_[?_]", "orValue"})
_QUANTITY_RE = re.compile(quantity.PATTERN)
_SEMVER_RE = re.compile(semver.PATTERN)
_SEMVER_NORMALIZED_RE = re.compile(semver.NORMALIZED_PATTERN)

Folded = quantity.Quantity | semver.Version


class Rewriter:
    def __init__(self, checked: A.CheckedAst) -> None:
        self.ast = checked
        self.folded: dict[int, Folded] = {}
        self._names = 0

    # -- building blocks ---------------------------------------------------------------------

    def _id(self) -> int:
        return self.ast.new_id()

    def fresh(self, stem: str) -> str:
        self._names += 1
        return f"@{stem}{self._names}"

    def const(self, kind: A.ConstKind, value: A.ConstValue) -> A.Const:
        return A.Const(self._id(), kind, value)

    def string(self, value: str) -> A.Const:
        return self.const("string", value)

    def integer(self, value: int) -> A.Const:
        return self.const("int", value)

    def ident(self, name: str) -> A.Ident:
        return A.Ident(self._id(), name)

    def call(self, function: str, *args: A.Expr, target: A.Expr | None = None) -> A.Call:
        return A.Call(self._id(), function, list(args), target)

    def index(self, operand: A.Expr, key: str) -> A.Call:
        return self.call("_[_]", operand, self.string(key))

    def cond(self, c: A.Expr, t: A.Expr, f: A.Expr) -> A.Call:
        return self.call("_?_:_", c, t, f)

    def empty_map(self) -> A.CreateStruct:
        return A.CreateStruct(self._id(), [])

    def error(self, message: str) -> A.Expr:
        return self.call("_[_]", self.empty_map(), self.string(ERROR_KEY_PREFIX + message))

    def map_literal(self, items: Mapping[str, object]) -> A.CreateStruct:
        entries = []
        for k, v in items.items():
            value: A.Expr
            if isinstance(v, bool):
                value = self.const("bool", v)
            elif isinstance(v, int):
                value = self.integer(v)
            elif isinstance(v, bytes):
                value = self.const("bytes", v)
            else:
                assert isinstance(v, str)
                value = self.string(v)
            entries.append(A.Entry(self._id(), self.string(k), value))
        return A.CreateStruct(self._id(), entries)

    def clone(self, node: A.Expr) -> A.Expr:
        """A copy with fresh ids (a node must not appear twice in a tree)."""
        if isinstance(node, A.Const):
            return A.Const(self._id(), node.kind, node.value)
        if isinstance(node, A.Ident):
            return A.Ident(self._id(), node.name)
        if isinstance(node, A.Select):
            return A.Select(self._id(), self.clone(node.operand), node.field, node.test_only)
        if isinstance(node, A.Call):
            target = self.clone(node.target) if node.target is not None else None
            return A.Call(self._id(), node.function, [self.clone(a) for a in node.args], target)
        if isinstance(node, A.CreateList):
            return A.CreateList(
                self._id(), [self.clone(e) for e in node.elements], list(node.optional_indices)
            )
        if isinstance(node, A.CreateStruct):
            entries = [
                A.Entry(
                    self._id(),
                    e.key if isinstance(e.key, str) else self.clone(e.key),
                    self.clone(e.value),
                    e.optional,
                )
                for e in node.entries
            ]
            return A.CreateStruct(self._id(), entries, node.message_name)
        assert isinstance(node, A.Comprehension)
        return A.Comprehension(
            self._id(),
            iter_var=node.iter_var,
            iter_range=self.clone(node.iter_range),
            accu_var=node.accu_var,
            accu_init=self.clone(node.accu_init),
            loop_condition=self.clone(node.loop_condition),
            loop_step=self.clone(node.loop_step),
            result=self.clone(node.result),
            iter_var2=node.iter_var2,
        )

    @staticmethod
    def cheap(node: A.Expr) -> bool:
        """Cheap enough to evaluate twice rather than bind: look-ups and literals only."""
        for count, n in enumerate(A.walk(node)):
            if count >= 16 or isinstance(n, A.Comprehension | A.CreateList):
                return False
            if isinstance(n, A.Call) and n.function not in _CHEAP_CALLS:
                return False
            if isinstance(n, A.CreateStruct) and n.entries:
                return False
        return True

    def share(self, value: A.Expr, body: Callable[[Callable[[], A.Expr]], A.Expr]) -> A.Expr:
        """``body`` gets a factory of references to ``value``, evaluated once if not cheap."""
        if self.cheap(value):
            first = [True]

            def again() -> A.Expr:
                if first[0]:
                    first[0] = False
                    return value
                return self.clone(value)

            return body(again)
        name = self.fresh("v")
        return A.Comprehension(
            self._id(),
            iter_var="#unused",
            iter_range=A.CreateList(self._id(), []),
            accu_var=name,
            accu_init=value,
            loop_condition=self.const("bool", False),
            loop_step=self.ident(name),
            result=body(lambda: self.ident(name)),
        )

    def key(self, node: A.Expr) -> A.Expr:
        folded = self.folded.get(node.id)
        if isinstance(folded, quantity.Quantity):
            return self.string(folded.key)
        if isinstance(folded, semver.Version):
            return self.const("bytes", folded.key)
        return self.index(node, quantity.KEY)

    def fold(self, value: Folded) -> A.Expr:
        node = self.map_literal(value.cel())
        self.folded[node.id] = value
        return node

    # -- the walk ----------------------------------------------------------------------------

    def rewrite(self, node: A.Expr) -> A.Expr:
        before = list(node.children())
        result = self._rewrite(node)
        if result is node and any(
            new is not old or new.raw is None
            for old, new in zip(before, node.children(), strict=True)
        ):
            node.raw = None  # its serialized form holds the old children
        return result

    def _rewrite(self, node: A.Expr) -> A.Expr:
        if isinstance(node, A.Select):
            node.operand = self.rewrite(node.operand)
            if (
                not node.test_only
                and isinstance(node.operand, A.Select)
                and node.operand.field in _DOMAIN_MAPS
                and not node.operand.test_only
            ):
                return self.domain(node.operand, self.string(node.field))
            return node
        if isinstance(node, A.Call):
            if node.target is not None:
                node.target = self.rewrite(node.target)
            node.args = [self.rewrite(a) for a in node.args]
            if node.function == "_[_]" and len(node.args) == 2:
                operand = node.args[0]
                if (
                    isinstance(operand, A.Select)
                    and operand.field in _DOMAIN_MAPS
                    and not operand.test_only
                ):
                    return self.domain(operand, node.args[1])
            if node.function in envmod.KUBERNETES_FUNCTIONS:
                return self.kubernetes(node)
            return node
        if isinstance(node, A.CreateList):
            node.elements = [self.rewrite(e) for e in node.elements]
            return node
        if isinstance(node, A.CreateStruct):
            for e in node.entries:
                if isinstance(e.key, A.Expr):
                    e.key = self.rewrite(e.key)
                e.value = self.rewrite(e.value)
            return node
        if isinstance(node, A.Comprehension):
            node.iter_range = self.rewrite(node.iter_range)
            node.accu_init = self.rewrite(node.accu_init)
            node.loop_condition = self.rewrite(node.loop_condition)
            node.loop_step = self.rewrite(node.loop_step)
            node.result = self.rewrite(node.result)
            return node
        return node

    def domain(self, domains: A.Expr, key: A.Expr) -> A.Expr:
        """``m[key]`` on attributes/capacity: an unknown domain is an empty map."""
        lookup = self.call("_[?_]", domains, key)
        return self.call("orValue", self.empty_map(), target=lookup)

    # -- the Kubernetes functions --------------------------------------------------------------

    def kubernetes(self, node: A.Call) -> A.Expr:
        fn = node.function
        operands = ([node.target] if node.target is not None else []) + node.args
        handler = getattr(self, "_fn_" + fn)
        result: A.Expr = handler(node, *operands)
        return result

    def _fn_quantity(self, node: A.Call, text: A.Expr) -> A.Expr:
        if isinstance(text, A.Const) and isinstance(text.value, str):
            try:
                return self.fold(quantity.parse(text.value))
            except quantity.QuantityError as e:
                return self.error(str(e))
        return self.call(envmod.PARSE_QUANTITY, text)

    def _fn_isQuantity(self, node: A.Call, text: A.Expr) -> A.Expr:
        if isinstance(text, A.Const) and isinstance(text.value, str):
            return self.const("bool", bool(_QUANTITY_RE.match(text.value)))
        return self.call("matches", self.string(quantity.PATTERN), target=text)

    def _fn_semver(self, node: A.Call, text: A.Expr, normalize: A.Expr | None = None) -> A.Expr:
        if normalize is None:
            normalize = self.const("bool", False)
        if (
            isinstance(text, A.Const)
            and isinstance(text.value, str)
            and isinstance(normalize, A.Const)
        ):
            try:
                return self.fold(semver.parse(text.value, bool(normalize.value)))
            except semver.SemverError as e:
                return self.error(str(e))
        return self.call(envmod.PARSE_SEMVER, text, normalize)

    def _fn_isSemver(self, node: A.Call, text: A.Expr, normalize: A.Expr | None = None) -> A.Expr:
        if normalize is None:
            normalize = self.const("bool", False)
        if isinstance(normalize, A.Const):
            strict = not normalize.value
            if isinstance(text, A.Const) and isinstance(text.value, str):
                return self.const("bool", semver.is_valid(text.value, not strict))
            pattern = semver.PATTERN if strict else semver.NORMALIZED_PATTERN
            return self.call("matches", self.string(pattern), target=text)
        return self.share(
            text,
            lambda t: self.cond(
                normalize,
                self.call("matches", self.string(semver.NORMALIZED_PATTERN), target=t()),
                self.call("matches", self.string(semver.PATTERN), target=t()),
            ),
        )

    def _fn_compareTo(self, node: A.Call, a: A.Expr, b: A.Expr) -> A.Expr:
        ka, kb = self.key(a), self.key(b)
        return self.share(
            ka,
            lambda x: self.share(
                kb,
                lambda y: self.cond(
                    self.call("_<_", x(), y()),
                    self.integer(-1),
                    self.cond(self.call("_>_", x(), y()), self.integer(1), self.integer(0)),
                ),
            ),
        )

    def _fn_isGreaterThan(self, node: A.Call, a: A.Expr, b: A.Expr) -> A.Expr:
        return self.call("_>_", self.key(a), self.key(b))

    def _fn_isLessThan(self, node: A.Call, a: A.Expr, b: A.Expr) -> A.Expr:
        return self.call("_<_", self.key(a), self.key(b))

    def _fn_sign(self, node: A.Call, q: A.Expr) -> A.Expr:
        folded = self.folded.get(q.id)
        if isinstance(folded, quantity.Quantity):
            return self.integer((folded.nanos > 0) - (folded.nanos < 0))
        return self.share(
            self.key(q),
            lambda k: self.cond(
                self.call("_>_", k(), self.string(quantity.ZERO_KEY)),
                self.integer(1),
                self.cond(
                    self.call("_<_", k(), self.string(quantity.ZERO_KEY)),
                    self.integer(-1),
                    self.integer(0),
                ),
            ),
        )

    def _fn_asApproximateFloat(self, node: A.Call, q: A.Expr) -> A.Expr:
        folded = self.folded.get(q.id)
        if isinstance(folded, quantity.Quantity):
            return self.const("double", folded.nanos / quantity.NANO)
        return self.call("double", self.index(q, quantity.CANONICAL))

    def _fn_asInteger(self, node: A.Call, q: A.Expr) -> A.Expr:
        folded = self.folded.get(q.id)
        if isinstance(folded, quantity.Quantity):
            if folded.is_integer():
                return self.integer(folded.nanos // quantity.NANO)
            return self.error("cannot convert value to integer")
        return self.share(
            self.index(q, quantity.CANONICAL),
            lambda c: self.cond(
                self.call("contains", self.string("."), target=c()),
                self.error("cannot convert value to integer"),
                self.call("int", c()),
            ),
        )

    def _fn_isInteger(self, node: A.Call, q: A.Expr) -> A.Expr:
        folded = self.folded.get(q.id)
        if isinstance(folded, quantity.Quantity):
            return self.const("bool", folded.is_integer())
        fractional = self.call(
            "contains", self.string("."), target=self.index(q, quantity.CANONICAL)
        )
        return self.call("!_", fractional)

    def _arithmetic(self, a: A.Expr, b: A.Expr, helper: str, subtract: bool) -> A.Expr:
        fa, fb = self.folded.get(a.id), self.folded.get(b.id)
        if isinstance(fa, quantity.Quantity):
            other: quantity.Quantity | None = None
            if isinstance(fb, quantity.Quantity):
                other = fb
            elif isinstance(b, A.Const) and b.kind == "int" and isinstance(b.value, int):
                other = quantity.from_int(b.value)
            if other is not None:
                return self.fold(fa - other if subtract else fa + other)
        return self.call(helper, a, b)

    def _fn_add(self, node: A.Call, a: A.Expr, b: A.Expr) -> A.Expr:
        return self._arithmetic(a, b, envmod.ADD_QUANTITY, subtract=False)

    def _fn_sub(self, node: A.Call, a: A.Expr, b: A.Expr) -> A.Expr:
        return self._arithmetic(a, b, envmod.SUB_QUANTITY, subtract=True)

    def _field(self, v: A.Expr, name: str) -> A.Expr:
        folded = self.folded.get(v.id)
        if isinstance(folded, semver.Version):
            number = folded.cel()[name]
            assert isinstance(number, int)
            return self.integer(number)
        return self.index(v, name)

    def _fn_major(self, node: A.Call, v: A.Expr) -> A.Expr:
        return self._field(v, semver.MAJOR)

    def _fn_minor(self, node: A.Call, v: A.Expr) -> A.Expr:
        return self._field(v, semver.MINOR)

    def _fn_patch(self, node: A.Call, v: A.Expr) -> A.Expr:
        return self._field(v, semver.PATCH)

    def _extreme(self, items: A.Expr, name: str, greater: bool) -> A.Expr:
        def body(lst: Callable[[], A.Expr]) -> A.Expr:
            x, acc = self.fresh("x"), self.fresh("m")
            better = (
                self.call("_<_", self.ident(acc), self.ident(x))
                if greater
                else self.call("_<_", self.ident(x), self.ident(acc))
            )
            fold = A.Comprehension(
                self._id(),
                iter_var=x,
                iter_range=lst(),
                accu_var=acc,
                accu_init=self.call("_[_]", lst(), self.integer(0)),
                loop_condition=self.const("bool", True),
                loop_step=self.cond(better, self.ident(x), self.ident(acc)),
                result=self.ident(acc),
            )
            empty = self.call("_==_", self.call("size", lst()), self.integer(0))
            return self.cond(empty, self.error(f"{name} called on an empty list"), fold)

        return self.share(items, body)

    def _fn_max(self, node: A.Call, items: A.Expr) -> A.Expr:
        return self._extreme(items, "max", greater=True)

    def _fn_min(self, node: A.Call, items: A.Expr) -> A.Expr:
        return self._extreme(items, "min", greater=False)

    def _fn_sum(self, node: A.Call, items: A.Expr) -> A.Expr:
        elem = self.ast.type_of(node)
        zero: A.Expr | None = None
        if elem.kind == "primitive" and elem.name == "int":
            zero = self.integer(0)
        elif elem.kind == "primitive" and elem.name == "uint":
            zero = self.const("uint", 0)
        elif elem.kind == "primitive" and elem.name == "double":
            zero = self.const("double", 0.0)
        elif elem.kind == "well_known" and elem.name == "duration":
            zero = self.call("duration", self.string("0s"))
        x, acc = self.fresh("x"), self.fresh("s")
        if zero is not None:
            return A.Comprehension(
                self._id(),
                iter_var=x,
                iter_range=items,
                accu_var=acc,
                accu_init=zero,
                loop_condition=self.const("bool", True),
                loop_step=self.call("_+_", self.ident(acc), self.ident(x)),
                result=self.ident(acc),
            )
        i = self.fresh("i")

        def body(lst: Callable[[], A.Expr]) -> A.Expr:
            first = self.cond(
                self.call("_==_", self.call("size", lst()), self.integer(0)),
                self.integer(0),
                self.call("_[_]", lst(), self.integer(0)),
            )
            step = self.cond(
                self.call("_==_", self.ident(i), self.integer(0)),
                self.ident(acc),
                self.call("_+_", self.ident(acc), self.ident(x)),
            )
            return A.Comprehension(
                self._id(),
                iter_var=i,
                iter_var2=x,
                iter_range=lst(),
                accu_var=acc,
                accu_init=first,
                loop_condition=self.const("bool", True),
                loop_step=step,
                result=self.ident(acc),
            )

        return self.share(items, body)

    def _fn_includes(self, node: A.Call, target: A.Expr, value: A.Expr) -> A.Expr:
        """``target.includes(value)``: membership for a list (of at most 48 values, as
        upstream bounds its cost), equality for a scalar."""

        def body(t: Callable[[], A.Expr]) -> A.Expr:
            is_list = self.call(
                "_==_", self.call("type", t()), self.call("type", A.CreateList(self._id(), []))
            )
            too_long = self.call("_>_", self.call("size", t()), self.integer(MAX_LIST_VALUES))
            member = self.cond(
                too_long,
                self.error(
                    "'includes' function cannot be applied to lists longer than "
                    f"{MAX_LIST_VALUES} values"
                ),
                self.call("@in", value, t()),
            )
            return self.cond(is_list, member, self.call("_==_", t(), self.clone(value)))

        return self.share(target, body)

    def _fn_isSorted(self, node: A.Call, items: A.Expr) -> A.Expr:
        def body(lst: Callable[[], A.Expr]) -> A.Expr:
            i, x, ok = self.fresh("i"), self.fresh("x"), self.fresh("ok")
            previous = self.call("_[_]", lst(), self.call("_-_", self.ident(i), self.integer(1)))
            step = self.call(
                "_||_",
                self.call("_==_", self.ident(i), self.integer(0)),
                self.call("_<=_", previous, self.ident(x)),
            )
            return A.Comprehension(
                self._id(),
                iter_var=i,
                iter_var2=x,
                iter_range=lst(),
                accu_var=ok,
                accu_init=self.const("bool", True),
                loop_condition=self.ident(ok),
                loop_step=step,
                result=self.ident(ok),
            )

        return self.share(items, body)


def rewrite(checked: A.CheckedAst) -> A.CheckedAst:
    """Rewrite in place and return the tree; every Kubernetes function call is gone after it."""
    checked.expr = Rewriter(checked).rewrite(checked.expr)
    return checked

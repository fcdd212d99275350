"""Checks upstream makes at compile time that the library's type checker cannot.

``device`` is declared as a map (the library cannot declare an object type without protobuf
descriptors), so field names on a device are checked here, as are literal lists and maps that
mix types (upstream enables homogeneous aggregate literals) and constant regular expressions.
"""

from __future__ import annotations

from collections.abc import Callable

from . import ast as A
from .errors import CompileError

DEVICE_FIELDS = frozenset({"driver", "attributes", "capacity", "allowMultipleAllocations"})
_IGNORED_KINDS = frozenset({"dyn", "null", "error", "type_param"})

RegexCheck = Callable[[str], str | None]
"""Returns the library's complaint about a pattern, or None if it compiles."""


def _error(checked: A.CheckedAst, node: A.Expr, message: str) -> CompileError:
    where = checked.location(node)
    offset = checked.positions.get(node.id)
    line, column = where if where else (None, None)
    prefix = f"ERROR: <input>:{line}:{column}: " if where else "ERROR: "
    return CompileError(prefix + message, line=line, column=column, offset=offset)


def check(checked: A.CheckedAst, variable: str, regex_error: RegexCheck) -> None:
    """Raise CompileError for the first problem found."""
    _walk(checked, checked.expr, frozenset(), frozenset(), variable, regex_error)


def _is_device(node: A.Expr, bound: frozenset[str], devices: frozenset[str], var: str) -> bool:
    if isinstance(node, A.Ident):
        if node.name in devices:
            return True
        return var == "device" and node.name == "device" and "device" not in bound
    return (
        var == "devices"
        and isinstance(node, A.Call)
        and node.function == "_[_]"
        and len(node.args) == 2
        and isinstance(node.args[0], A.Ident)
        and node.args[0].name == "devices"
        and "devices" not in bound
    )


def _walk(
    checked: A.CheckedAst,
    node: A.Expr,
    bound: frozenset[str],
    devices: frozenset[str],
    var: str,
    regex_error: RegexCheck,
) -> None:
    if isinstance(node, A.Select):
        if _is_device(node.operand, bound, devices, var) and node.field not in DEVICE_FIELDS:
            raise _error(checked, node, f"undefined field '{node.field}'")
        _walk(checked, node.operand, bound, devices, var, regex_error)
        return
    if isinstance(node, A.Comprehension):
        _walk(checked, node.iter_range, bound, devices, var, regex_error)
        _walk(checked, node.accu_init, bound, devices, var, regex_error)
        names = {node.iter_var, node.accu_var} | ({node.iter_var2} if node.iter_var2 else set())
        inner_bound = bound | names
        inner_devices = devices - names
        ranges_devices = (
            isinstance(node.iter_range, A.Ident)
            and node.iter_range.name == "devices"
            and var == "devices"
            and "devices" not in bound
        )
        if ranges_devices:
            # over a list the second variable (if any) is the element, else the first
            inner_devices |= {node.iter_var2 or node.iter_var}
        for part in (node.loop_condition, node.loop_step):
            _walk(checked, part, inner_bound, inner_devices, var, regex_error)
        _walk(
            checked,
            node.result,
            bound | {node.accu_var},
            devices - {node.accu_var},
            var,
            regex_error,
        )
        return
    if isinstance(node, A.Call) and node.function == "matches" and node.args:
        pattern = node.args[-1]
        if isinstance(pattern, A.Const) and isinstance(pattern.value, str):
            problem = regex_error(pattern.value)
            if problem:
                raise _error(checked, pattern, f"invalid matches argument: {problem}")
    if isinstance(node, A.CreateList):
        _homogeneous(checked, node.elements)
    if isinstance(node, A.CreateStruct) and not node.message_name:
        _homogeneous(checked, [e.key for e in node.entries if isinstance(e.key, A.Expr)])
        _homogeneous(checked, [e.value for e in node.entries])
    for child in node.children():
        _walk(checked, child, bound, devices, var, regex_error)


def _homogeneous(checked: A.CheckedAst, items: list[A.Expr]) -> None:
    first: A.Type | None = None
    for item in items:
        t = checked.type_of(item)
        if t.kind in _IGNORED_KINDS:
            continue
        if first is None:
            first = t
        elif t != first:
            raise _error(checked, item, f"expected type '{first}' but found '{t}'")


# -- result types the checker sees as dyn -------------------------------------------------

_DEVICE = "device"
_QUANTITY = "kubernetes.Quantity"
_ATTRIBUTE_DOMAIN = "map(string, dyn)"
_CAPACITY_DOMAIN = f"map(string, {_QUANTITY})"
_FIELD_TYPES = {
    "driver": "string",
    "allowMultipleAllocations": "bool",
    "attributes": f"map(string, {_ATTRIBUTE_DOMAIN})",
    "capacity": f"map(string, {_CAPACITY_DOMAIN})",
}
_MEMBER_TYPES = {
    _FIELD_TYPES["attributes"]: _ATTRIBUTE_DOMAIN,
    _ATTRIBUTE_DOMAIN: None,  # an attribute value: the one dynamic part of a device
    _FIELD_TYPES["capacity"]: _CAPACITY_DOMAIN,
    _CAPACITY_DOMAIN: _QUANTITY,
}


def static_type(checked: A.CheckedAst, variable: str) -> str | None:
    """The upstream type of the whole expression where the checker only knows ``dyn``.

    A device is a map to the library's checker, so ``device.driver`` is ``dyn`` to it; for
    upstream it is a string, a capacity a quantity, and only attribute values are dynamic.
    None when the type is dynamic (or beyond what this follows: comprehensions, calls).
    """
    return _static(checked, checked.expr, variable)


def _static(checked: A.CheckedAst, node: A.Expr, var: str) -> str | None:
    if _is_device(node, frozenset(), frozenset(), var):
        return _DEVICE
    if isinstance(node, A.Select):
        if node.test_only:
            return "bool"
        return _member(_static(checked, node.operand, var), node.field)
    if isinstance(node, A.Call) and node.function == "_[_]" and len(node.args) == 2:
        container, key = node.args
        if isinstance(container, A.CreateList):
            kinds = {_static(checked, e, var) for e in container.elements}
            return kinds.pop() if len(kinds) == 1 else None
        field = key.value if isinstance(key, A.Const) and isinstance(key.value, str) else ""
        return _member(_static(checked, container, var), field)
    if isinstance(node, A.Call) and node.function == "_?_:_" and len(node.args) == 3:
        then, otherwise = (_static(checked, a, var) for a in node.args[1:])
        return then if then == otherwise else None
    found = checked.type_of(node)
    return None if found.kind in _IGNORED_KINDS else str(found)


def _member(container: str | None, field: str) -> str | None:
    """The type of ``container.field`` (or ``container[field]``; "" for a computed key)."""
    if container == _DEVICE:
        return _FIELD_TYPES.get(field)
    return _MEMBER_TYPES.get(container or "")


# -- operators over device fields ---------------------------------------------------------

_SEMVER = "kubernetes.Semver"
_NUMBERS = frozenset({"int", "uint", "double"})
_ORDERED = _NUMBERS | {"string", "bytes", "bool", "google.protobuf.Timestamp"}
_SCALARS = _ORDERED | {_QUANTITY, _SEMVER, "google.protobuf.Duration"}
_SAME_TYPE = {
    "_+_": _NUMBERS | {"string", "bytes"},
    "_-_": _NUMBERS,
    "_*_": _NUMBERS,
    "_/_": _NUMBERS,
    "_%_": frozenset({"int", "uint"}),
}
_COMPARISONS = frozenset({"_<_", "_<=_", "_>_", "_>=_"})
_EQUALITY = frozenset({"_==_", "_!=_"})
_LOGICAL = frozenset({"_&&_", "_||_", "!_"})


def check_operators(checked: A.CheckedAst, variable: str) -> None:
    """Raise CompileError for an operator applied to device fields of types it has no
    overload for (``device.driver + 1``, ``device.capacity[d].memory > 1``), as upstream's
    checker does with its typed ``device``. Only operands whose types are known here are
    judged; attribute values stay dynamic, and anything the library typed it judged itself."""
    _operators(checked, checked.expr, variable)


def _operators(checked: A.CheckedAst, node: A.Expr, var: str) -> None:
    if isinstance(node, A.Comprehension) and var in {
        node.iter_var,
        node.iter_var2,
        node.accu_var,
    }:
        return  # the name means something else inside: nothing here to say about it
    if isinstance(node, A.Call) and not _operator_fits(checked, node, var):
        kinds = ", ".join(str(_static(checked, a, var)) for a in node.args)
        raise _error(
            checked,
            node,
            f"found no matching overload for '{node.function}' applied to '({kinds})'",
        )
    for child in node.children():
        _operators(checked, child, var)


def _operator_fits(checked: A.CheckedAst, node: A.Call, var: str) -> bool:
    name = node.function
    if name not in _SAME_TYPE and name not in _COMPARISONS | _EQUALITY | _LOGICAL | {"-_"}:
        return True
    if all(checked.type_of(a).kind not in _IGNORED_KINDS for a in node.args):
        return True  # the library's checker saw these types and accepted them
    kinds = [_static(checked, a, var) for a in node.args]
    if any(k is None or k not in _SCALARS for k in kinds):
        return True  # dynamic (an attribute value) or beyond this check: evaluation decides
    if name in _LOGICAL:
        return all(k == "bool" for k in kinds)
    if name == "-_":
        return kinds[0] in _NUMBERS
    left, right = kinds
    if name in _SAME_TYPE:
        return left == right and left in _SAME_TYPE[name]
    if name in _COMPARISONS:
        return (left == right and left in _ORDERED) or (left in _NUMBERS and right in _NUMBERS)
    return left == right or (left in _NUMBERS and right in _NUMBERS)

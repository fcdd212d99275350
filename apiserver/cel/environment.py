"""The CEL environment of Kubernetes DRA, on the cel-expr-python library (CEL C++).

What an expression may use:

* ``device`` (selectors) or ``devices`` (constraints): see ``values``;
* the CEL standard library, with the extensions Kubernetes enables that the library ships
  natively: strings, lists (``slice``, ``flatten``, ``distinct``, ``range``, ``reverse``,
  ``sort``, ``sortBy``), sets, optional types, ``cel.bind`` and two-variable comprehensions;
* Kubernetes' quantity and semver libraries and the list functions ``isSorted``, ``sum``,
  ``min``, ``max``;
* DRA's ``includes`` member function of list-type attributes (upstream's
  ``DRAListTypeAttributes``): ``x.includes(v)`` is ``v in x`` for a list of at most 48
  values (an error beyond), ``x == v`` for a scalar.

The Kubernetes functions are declared here with their upstream signatures (so the type checker
rejects ``quantity('1') + 1`` as upstream does) but have no implementation: ``rewrite`` turns
every call into native CEL before a program is planned. The few that cannot be native (parsing
a quantity or version that is not a literal; quantity arithmetic) call the helpers registered
here, which are Python functions. The library keeps each argument of a Python call alive, so
those helpers are kept off the common paths.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from cel_expr_python import cel

from . import quantity, semver

QUANTITY_TYPE = "kubernetes.Quantity"
SEMVER_TYPE = "kubernetes.Semver"

EXTENSIONS = ("strings", "lists", "sets", "optional", "bindings", "two-var-comprehensions")

# Helpers the rewritten programs call when native CEL cannot do the work.
PARSE_QUANTITY = "@quantity"
PARSE_SEMVER = "@semver"
ADD_QUANTITY = "@quantityAdd"
SUB_QUANTITY = "@quantitySub"

_T: dict[str, Any] = {"type_name": "T", "is_type_param": True}


def _t(name: str) -> dict[str, Any]:
    return {"type_name": name}


def _list_t() -> dict[str, Any]:
    return {"type_name": "list", "params": [_T]}


def _overload(
    oid: str, ret: dict[str, Any], args: list[dict[str, Any]], target: dict[str, Any] | None = None
) -> dict[str, Any]:
    o: dict[str, Any] = {"id": oid, "return": ret}
    if target is not None:
        o["target"] = target
    if args:
        o["args"] = args
    return o


def declarations() -> list[dict[str, Any]]:
    """The Kubernetes functions, as the environment config declares them."""
    q, s = _t(QUANTITY_TYPE), _t(SEMVER_TYPE)
    string, boolean, integer, double = _t("string"), _t("bool"), _t("int"), _t("double")
    fns: dict[str, list[dict[str, Any]]] = {
        "quantity": [_overload("string_to_quantity", q, [string])],
        "isQuantity": [_overload("is_quantity_string", boolean, [string])],
        "sign": [
            _overload("quantity_sign", integer, [q]),
            _overload("quantity_sign_member", integer, [], q),
        ],
        "asApproximateFloat": [_overload("quantity_get_float", double, [], q)],
        "asInteger": [_overload("quantity_get_int", integer, [], q)],
        "isInteger": [_overload("quantity_is_integer", boolean, [], q)],
        "add": [
            _overload("quantity_add", q, [q], q),
            _overload("quantity_add_int", q, [integer], q),
        ],
        "sub": [
            _overload("quantity_sub", q, [q], q),
            _overload("quantity_sub_int", q, [integer], q),
        ],
        "semver": [
            _overload("string_to_semver", s, [string]),
            _overload("string_bool_to_semver", s, [string, boolean]),
        ],
        "isSemver": [
            _overload("is_semver_string", boolean, [string]),
            _overload("is_semver_string_bool", boolean, [string, boolean]),
        ],
        "major": [_overload("semver_major", integer, [], s)],
        "minor": [_overload("semver_minor", integer, [], s)],
        "patch": [_overload("semver_patch", integer, [], s)],
        "compareTo": [
            _overload("quantity_compare_to", integer, [q], q),
            _overload("semver_compare_to", integer, [s], s),
        ],
        "isGreaterThan": [
            _overload("quantity_is_greater_than", boolean, [q], q),
            _overload("semver_is_greater_than", boolean, [s], s),
        ],
        "isLessThan": [
            _overload("quantity_is_less_than", boolean, [q], q),
            _overload("semver_is_less_than", boolean, [s], s),
        ],
        "isSorted": [_overload("list_is_sorted", boolean, [], _list_t())],
        "sum": [_overload("list_sum", _T, [], _list_t())],
        "max": [_overload("list_max", _T, [], _list_t())],
        "min": [_overload("list_min", _T, [], _list_t())],
        "includes": [_overload("dra_includes_dyn_dyn", boolean, [_t("dyn")], _t("dyn"))],
    }
    return [{"name": name, "overloads": overloads} for name, overloads in fns.items()]


KUBERNETES_FUNCTIONS = frozenset(d["name"] for d in declarations())


# -- helpers (Python; only on the paths native CEL cannot take) --------------------------------


def _parse_quantity(text: str) -> dict[str, str]:
    return quantity.parse(text).cel()


def _parse_semver(text: str, normalize: bool) -> dict[str, object]:
    return semver.parse(text, normalize).cel()


def _operand(value: object) -> quantity.Quantity:
    if isinstance(value, int) and not isinstance(value, bool):
        return quantity.from_int(value)
    return quantity.from_cel(value)


def _add(a: object, b: object) -> dict[str, str]:
    return (quantity.from_cel(a) + _operand(b)).cel()


def _sub(a: object, b: object) -> dict[str, str]:
    return (quantity.from_cel(a) - _operand(b)).cel()


def _helpers() -> list[Any]:
    m = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
    string, boolean, integer = cel.Type.STRING, cel.Type.BOOL, cel.Type.INT
    return [
        cel.FunctionDecl(
            PARSE_QUANTITY, [cel.Overload("@quantity_string", m, [string], impl=_parse_quantity)]
        ),
        cel.FunctionDecl(
            PARSE_SEMVER,
            [cel.Overload("@semver_string_bool", m, [string, boolean], impl=_parse_semver)],
        ),
        cel.FunctionDecl(
            ADD_QUANTITY,
            [
                cel.Overload("@quantity_add_map", m, [m, m], impl=_add),
                cel.Overload("@quantity_add_int", m, [m, integer], impl=_add),
            ],
        ),
        cel.FunctionDecl(
            SUB_QUANTITY,
            [
                cel.Overload("@quantity_sub_map", m, [m, m], impl=_sub),
                cel.Overload("@quantity_sub_int", m, [m, integer], impl=_sub),
            ],
        ),
    ]


def config_yaml() -> str:
    """The environment config; JSON is valid YAML, and the library reads YAML."""
    return json.dumps(
        {"extensions": [{"name": e} for e in EXTENSIONS], "functions": declarations()}, indent=1
    )


VARIABLE_TYPES = {
    "device": lambda: cel.Type.Map(cel.Type.STRING, cel.Type.DYN),
    "devices": lambda: cel.Type.List(cel.Type.DYN),
}


@cache
def environment(variable: str) -> Any:
    """The environment of selectors (``device``) or of constraints (``devices``)."""
    return cel.NewEnv(
        config=cel.NewEnvConfigFromYaml(config_yaml()),
        variables={variable: VARIABLE_TYPES[variable]()},
        functions=_helpers(),
    )

"""Turn upstream's allocator test tables into our case data (a development aid, run by hand).

    python tests/unit/allocator/upstream/translate.py allocator_testing.go \
        lexicographical_testing.go > cases.json

Upstream's cases (kubernetes/dynamic-resource-allocation,
``structured/internal/allocatortesting/``) are Go composite literals built with a few dozen
small helper functions. This reads them with a tiny evaluator of the Go expression subset
those tables use (calls, composite literals, selectors, closures with assignments) and our
own Python versions of the helpers, and prints every case as Kubernetes JSON objects: the
node, classes, slices, allocated devices, claims, the gates the case turns on, and what
upstream expects. ``organise.py`` then writes the reviewed per-area YAML files; the YAML is
what the tests read, never this script's output directly.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# ---------------------------------------------------------------- tokens

TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r]+)
  | (?P<nl>\n)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<raw>`[^`]*`)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<num>\d+(?:\.\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\.\.\.|:=|==|!=|<=|>=|&&|\|\||\+\+|--|\+=|[-+*/%&|!<>=(){}\[\],.;:])
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass
class Tok:
    kind: str
    text: str
    line: int


def tokens(src: str) -> list[Tok]:
    out: list[Tok] = []
    line, pos = 1, 0
    while pos < len(src):
        m = TOKEN.match(src, pos)
        if m is None:
            raise SyntaxError(f"line {line}: cannot read {src[pos : pos + 20]!r}")
        kind, text = m.lastgroup or "", m.group()
        if kind == "nl":
            # Go's automatic semicolon after a line that ends an operand or a closer.
            if out and (
                out[-1].kind in ("ident", "num", "str", "raw")
                or out[-1].text in (")", "]", "}", "++", "--")
            ):
                out.append(Tok("op", ";", line))
            line += 1
        elif kind == "comment":
            line += text.count("\n")
        elif kind != "ws":
            out.append(Tok(kind, text, line))
        pos = m.end()
    return out


# ---------------------------------------------------------------- values


class Struct(dict[str, Any]):
    """A Go struct value: Go field names to values (later turned into JSON names)."""


@dataclass
class Func:
    params: list[str]
    body_start: int
    body_end: int


def field(value: Any, name: Any) -> Any:
    """value.name, with ObjectMeta's fields promoted as Go embeds them."""
    if isinstance(value, dict) and name not in value and "ObjectMeta" in value:
        return value["ObjectMeta"][name]
    return value[name]


class Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


MAP_TYPES = {"ConsumedCapacity", "ConsumedCapacityCollection"}


class Evaluator:
    def __init__(self, toks: list[Tok], helpers: dict[str, Callable[..., Any]]) -> None:
        self.t = toks
        self.i = 0
        self.scopes: list[dict[str, Any]] = [helpers]

    # -- token helpers
    def peek(self, k: int = 0) -> Tok:
        return self.t[self.i + k]

    def take(self, text: str | None = None) -> Tok:
        tok = self.t[self.i]
        if text is not None and tok.text != text:
            raise SyntaxError(f"line {tok.line}: expected {text!r}, got {tok.text!r}")
        self.i += 1
        return tok

    def at(self, text: str) -> bool:
        return self.t[self.i].text == text

    def skip_semis(self) -> None:
        while self.i < len(self.t) and self.at(";"):
            self.i += 1

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise NameError(f"line {self.peek(-1).line}: unknown name {name}")

    def bound(self, name: str) -> bool:
        return any(name in s for s in self.scopes)

    # -- types: parsed and reduced to a shape
    def parse_type(self) -> tuple[Any, ...]:
        if self.at("*"):
            self.take()
            return self.parse_type()
        if self.at("["):
            self.take("[")
            self.take("]")
            return ("slice", self.parse_type())
        tok = self.take()
        if tok.text == "map":
            self.take("[")
            key = self.parse_type()
            self.take("]")
            return ("map", key, self.parse_type())
        if tok.text == "func":
            self.skip_group("(", ")")
            if self.at("("):
                self.skip_group("(", ")")
            elif not self.at("{"):
                self.parse_type()
            return ("func",)
        name = tok.text
        if self.at(".") and self.peek(1).kind == "ident":
            self.take(".")
            name = self.take().text
        if self.at("["):  # generic instantiation
            self.skip_group("[", "]")
        return ("named", name)

    def skip_group(self, open_: str, close: str) -> None:
        self.take(open_)
        depth = 1
        while depth:
            tok = self.take()
            if tok.text == open_:
                depth += 1
            elif tok.text == close:
                depth -= 1

    # -- expressions
    def expr(self, nolit: bool = False) -> Any:
        return self.binary(0, nolit)

    PREC = {
        "||": 1,
        "&&": 2,
        "==": 3,
        "!=": 3,
        "<": 3,
        ">": 3,
        "<=": 3,
        ">=": 3,
        "+": 4,
        "-": 4,
        "*": 5,
        "/": 5,
    }

    def binary(self, level: int, nolit: bool) -> Any:
        left = self.unary(nolit)
        while self.peek().text in self.PREC and self.PREC[self.peek().text] > level:
            op = self.take().text
            right = self.binary(self.PREC[op], nolit)
            left = {
                "||": lambda a, b: a or b,
                "&&": lambda a, b: a and b,
                "==": lambda a, b: a == b,
                "!=": lambda a, b: a != b,
                "<": lambda a, b: a < b,
                ">": lambda a, b: a > b,
                "<=": lambda a, b: a <= b,
                ">=": lambda a, b: a >= b,
                "+": lambda a, b: a + b,
                "-": lambda a, b: a - b,
                "*": lambda a, b: a * b,
                "/": lambda a, b: a // b,
            }[op](left, right)
        return left

    def unary(self, nolit: bool) -> Any:
        if self.at("&") or self.at("*"):
            self.take()
            return self.unary(nolit)
        if self.at("-"):
            self.take()
            return -self.unary(nolit)
        if self.at("!"):
            self.take()
            return not self.unary(nolit)
        return self.postfix(self.primary(nolit), nolit)

    def primary(self, nolit: bool) -> Any:
        tok = self.peek()
        if tok.kind == "str":
            self.take()
            return json.loads(tok.text)
        if tok.kind == "raw":
            self.take()
            return tok.text[1:-1]
        if tok.kind == "num":
            self.take()
            return float(tok.text) if "." in tok.text else int(tok.text)
        if tok.text == "(":
            self.take()
            value = self.expr()
            self.take(")")
            return value
        if tok.text == "func":
            self.take()
            params = self.params()
            if not self.at("{"):
                self.parse_type()
            start = self.i
            self.skip_group("{", "}")
            return Func(params, start, self.i)
        if tok.text in ("[", "map"):
            shape = self.parse_type()
            if self.at("{"):
                return self.literal(shape)
            # conversion such as []byte(x)
            self.take("(")
            value = self.expr()
            self.take(")")
            return value
        if tok.text == "{":  # elided type inside a composite literal
            return self.literal(None)
        if tok.kind == "ident":
            self.take()
            name = tok.text
            if name in ("nil",):
                return None
            if name in ("true", "false"):
                return name == "true"
            if name == "new":
                self.take("(")
                value = self.expr()
                self.take(")")
                return copy.deepcopy(value)
            if self.at(".") and self.peek(1).kind == "ident" and not self.bound(name):
                # qualified name: pkg.Name
                self.take(".")
                name = f"{name}.{self.take().text}"
                if self.at("[") and name in ("sets.Set",):
                    self.skip_group("[", "]")
            if self.bound(name):
                return self.lookup(name)
            if self.at("{") and not nolit:
                return self.literal(("named", name.split(".")[-1]))
            if self.at("("):  # conversion to a named type
                self.take("(")
                value = self.expr()
                self.take(")")
                return value
            raise NameError(f"line {tok.line}: unknown name {name}")
        raise SyntaxError(f"line {tok.line}: unexpected {tok.text!r}")

    def params(self) -> list[str]:
        self.take("(")
        names: list[str] = []
        while not self.at(")"):
            names.append(self.take().text)
            if not self.at(",") and not self.at(")"):
                self.parse_type()
            if self.at(","):
                self.take()
        self.take(")")
        return names

    def literal(self, shape: tuple[Any, ...] | None) -> Any:
        self.take("{")
        keyed: list[tuple[Any, Any, int]] = []
        items: list[Any] = []
        kind = None if shape is None else shape[0]
        if kind == "named" and shape is not None and shape[1] in MAP_TYPES:
            kind = "map"
        while not self.at("}"):
            self.skip_semis()
            if self.at("}"):
                break
            line = self.peek().line
            field_key = (
                self.peek().kind == "ident"
                and self.peek(1).text == ":"
                and (kind == "named" or (kind is None and self.peek().text[0].isupper()))
            )
            if field_key:
                key: Any = self.take().text
                self.take(":")
                keyed.append((key, self.expr(), line))
            else:
                value = self.expr()
                if self.at(":"):
                    self.take(":")
                    keyed.append((value, self.expr(), line))
                else:
                    items.append(value)
            self.skip_semis()
            if self.at(","):
                self.take()
            self.skip_semis()
        self.take("}")
        if kind == "slice" or (kind is None and items):
            return items
        if kind == "map" or (kind is None and keyed and not isinstance(keyed[0][0], str)):
            return {k: v for k, v, _ in keyed}
        if kind is None and keyed and not keyed[0][0][0].isupper():
            return {k: v for k, v, _ in keyed}
        return Struct({k: v for k, v, _ in keyed})

    def postfix(self, value: Any, nolit: bool) -> Any:
        while True:
            if self.at("."):
                self.take()
                name = self.take().text
                if self.at("("):
                    args = self.args()
                    value = call_method(value, name, args)
                else:
                    value = field(value, name)
            elif self.at("("):
                args = self.args()
                value = self.call(value, args)
            elif self.at("["):
                self.take("[")
                index = self.expr()
                self.take("]")
                value = value[index]
            else:
                return value

    def args(self) -> list[Any]:
        self.take("(")
        out: list[Any] = []
        while not self.at(")"):
            self.skip_semis()
            value = self.expr()
            if self.at("..."):
                self.take()
                out.extend(value or [])
            else:
                out.append(value)
            self.skip_semis()
            if self.at(","):
                self.take()
            self.skip_semis()
        self.take(")")
        return out

    def call(self, fn: Any, args: list[Any]) -> Any:
        if isinstance(fn, Func):
            saved = self.i
            self.scopes.append(dict(zip(fn.params, args, strict=False)))
            self.i = fn.body_start
            try:
                self.block()
            except Return as r:
                return r.value
            finally:
                self.scopes.pop()
                self.i = saved
            return None
        return fn(*args)

    # -- statements (closure bodies)
    def block(self) -> None:
        self.take("{")
        while True:
            self.skip_semis()
            if self.at("}"):
                self.take()
                return
            self.statement()

    def statement(self) -> None:
        if self.at("return"):
            self.take()
            values = [self.expr()]
            while self.at(","):
                self.take()
                values.append(self.expr())
            raise Return(values[0] if len(values) == 1 else values)
        if self.at("for"):
            self.for_statement()
            return
        if self.at("var"):
            self.take()
            name = self.take().text
            self.parse_type()
            self.scopes[-1][name] = None
            return
        start = self.i
        # simple statement: find the operator at depth 0
        depth, j = 0, self.i
        while True:
            text = self.t[j].text
            if text in "([{":
                depth += 1
            elif text in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and text in (";", ":=", "=", "+=", "++", "--"):
                break
            j += 1
        op = self.t[j].text
        if op == ":=":
            names = []
            while not self.at(":="):
                names.append(self.take().text)
                if self.at(","):
                    self.take()
            self.take(":=")
            value = self.expr()
            self.scopes[-1][names[0]] = value
            return
        if op in ("=", "+=", "++", "--"):
            path = self.lvalue()
            self.take(op)
            if op == "++":
                self.assign(path, self.get(path) + 1)
            elif op == "--":
                self.assign(path, self.get(path) - 1)
            elif op == "+=":
                self.assign(path, self.get(path) + self.expr())
            else:
                self.assign(path, self.expr())
            return
        self.i = start
        self.expr()

    def lvalue(self) -> list[Any]:
        path: list[Any] = [self.take().text]
        while self.peek().text not in ("=", "+=", "++", "--"):
            if self.at("."):
                self.take()
                path.append(self.take().text)
            else:
                self.take("[")
                path.append(self.expr())
                self.take("]")
        return path

    def get(self, path: list[Any]) -> Any:
        value = self.lookup(path[0])
        for part in path[1:]:
            value = field(value, part)
        return value

    def assign(self, path: list[Any], value: Any) -> None:
        if len(path) == 1:
            for scope in reversed(self.scopes):
                if path[0] in scope:
                    scope[path[0]] = value
                    return
            self.scopes[-1][path[0]] = value
            return
        target = self.lookup(path[0])
        for part in path[1:-1]:
            if isinstance(target, dict) and target.get(part) is None:
                target[part] = Struct()
            target = target[part]
        last = path[-1]
        if last == "Name" and "ObjectMeta" in target:
            target = target["ObjectMeta"]
        target[last] = value

    def for_statement(self) -> None:
        self.take("for")
        # for i := a; i < b; i++ { ... }
        var = self.take().text
        if self.at(","):
            raise SyntaxError("range loops are not used by the tables")
        self.take(":=")
        self.scopes.append({var: self.expr(True)})
        self.take(";")
        cond_at = self.i
        while True:
            self.i = cond_at
            ok = self.expr(True)
            self.take(";")
            post_at = self.i
            while not self.at("{"):
                self.i += 1
            if not ok:
                self.skip_group("{", "}")
                break
            self.block()
            after = self.i
            self.i = post_at
            self.statement()
            self.i = after
        self.scopes.pop()

    # -- the function whose body holds the table
    def run_function(self, name: str) -> dict[str, Any]:
        """Runs the statements of ``func name(...) {`` until ``testcases := ...``."""
        for k, tok in enumerate(self.t):
            if tok.text == "func" and self.t[k + 1].text == name:
                self.i = k + 2
                break
        self.params()
        self.take("{")
        while True:
            self.skip_semis()
            if self.peek().text == "testcases":
                self.take()
                self.take(":=")
                self.parse_type()
                return self.cases()
            self.statement()

    def cases(self) -> dict[str, Any]:
        self.take("{")
        out: dict[str, Any] = {}
        while True:
            self.skip_semis()
            if self.at("}"):
                return out
            tok = self.take()
            name = json.loads(tok.text)
            self.take(":")
            value = self.literal(("named", "AllocatorTestCase"))
            value["__line"] = tok.line
            out[name] = value
            self.skip_semis()
            if self.at(","):
                self.take()

    def consts(self) -> None:
        """Top-level const and var blocks (names such as node1, fixedShareID)."""
        k = 0
        while k < len(self.t):
            tok = self.t[k]
            if (
                tok.text in ("const", "var")
                and self.t[k + 1].text == "("
                and (k == 0 or self.t[k - 1].text == ";")
            ):
                self.i = k + 2
                while True:
                    self.skip_semis()
                    if self.at(")"):
                        break
                    name = self.take().text
                    if not self.at("="):
                        self.parse_type()
                    self.take("=")
                    self.scopes[0][name] = self.expr()
                k = self.i
            k += 1


# ---------------------------------------------------------------- our versions of the helpers


class Q(str):
    """A resource.Quantity, kept in its written form."""


def sprintf(fmt: str, *args: Any) -> str:
    values = iter(args)

    def one(m: re.Match[str]) -> str:
        if m.group() == "%%":
            return "%"
        value = next(values)
        if m.group() == "%q":
            return json.dumps(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return re.sub(r"%[svdq%]", one, fmt)


def meta(name: str) -> Struct:
    return Struct(Name=name)


def node(name: str, region: str) -> Struct:
    return Struct(ObjectMeta=Struct(Name=name, Labels={"region": region, "planet": "earth"}))


def selector(expression: str) -> Struct:
    return Struct(CEL=Struct(Expression=expression))


def device_class(name: str, driver: str) -> Struct:
    return Struct(
        ObjectMeta=meta(name), Spec=Struct(Selectors=[selector(f'device.driver == "{driver}"')])
    )


def class_multi(name: str, driver: str, multi: bool) -> Struct:
    expression = sprintf(
        'device.driver == "%s" && device.allowMultipleAllocations == %v', driver, multi
    )
    return Struct(ObjectMeta=meta(name), Spec=Struct(Selectors=[selector(expression)]))


def device_configuration(driver: str, attribute: str) -> Struct:
    return Struct(Opaque=Struct(Driver=driver, Parameters={attribute: attribute + "Value"}))


def class_with_config(name: str, driver: str, attribute: str) -> Struct:
    out = device_class(name, driver)
    out["Spec"]["Config"] = [Struct(DeviceConfiguration=device_configuration(driver, attribute))]
    return out


def claim_with_requests(name: str, constraints: Any, *requests: Any) -> Struct:
    return Struct(
        ObjectMeta=meta(name),
        Spec=Struct(Devices=Struct(Requests=list(requests), Constraints=constraints)),
    )


def request(name: str, klass: str, count: int, *selectors: Any) -> Struct:
    return Struct(
        Name=name,
        Exactly=Struct(
            Count=count,
            AllocationMode="ExactCount",
            DeviceClassName=klass,
            Selectors=list(selectors) or None,
        ),
    )


def all_request(name: str, klass: str) -> Struct:
    return Struct(Name=name, Exactly=Struct(AllocationMode="All", DeviceClassName=klass))


def sub_request(name: str, klass: str, count: int, *fields: Any) -> Struct:
    out = Struct(Name=name, Count=count, AllocationMode="ExactCount", DeviceClassName=klass)
    for f in fields:
        key = "Selectors" if "CEL" in f else "Tolerations"
        out.setdefault(key, []).append(f)
    return out


def prioritized(name: str, *subs: Any) -> Struct:
    return Struct(Name=name, FirstAvailable=list(subs))


def claim_with_request(name: str, req: str, klass: str, *constraints: Any) -> Struct:
    return claim_with_requests(name, list(constraints) or None, request(req, klass, 1))


def claim(name: str) -> Struct:
    return Struct(ObjectMeta=meta(name))


def claim_with_device_config(
    name: str, req: str, klass: str, driver: str, attribute: str
) -> Struct:
    out = claim_with_request(name, req, klass)
    out["Spec"]["Devices"]["Config"] = [
        Struct(DeviceConfiguration=device_configuration(driver, attribute))
    ]
    return out


def device_claim_config(requests: Any, config: Any) -> Struct:
    return Struct(Requests=requests, DeviceConfiguration=config)


def device(name: str, capacity: Any, attributes: Any) -> Struct:
    out = Struct(Name=name, Attributes=attributes)
    if isinstance(capacity, dict):
        out["Capacity"] = {k: Struct(Value=v) for k, v in capacity.items()}
    elif capacity == "fromCounters":
        out["__fromCounters"] = True
    return out


def counters(values: dict[str, Any]) -> dict[str, Any]:
    return {k: Struct(Value=v) for k, v in (values or {}).items()}


def consumption(counter_set: str, values: dict[str, Any]) -> Struct:
    return Struct(CounterSet=counter_set, Counters=counters(values))


def counter_set(name: str, values: dict[str, Any]) -> Struct:
    return Struct(Name=name, Counters=counters(values))


def resource_pool(name: str, count: int) -> Struct:
    return Struct(Name=name, ResourceSliceCount=count, Generation=1)


def a_slice(name: str, node_selection: Any, pool: Any, driver: str) -> Struct:
    if isinstance(pool, str):
        pool = resource_pool(pool, 1)
    spec = Struct(Driver=driver, Pool=pool)
    if isinstance(node_selection, dict):
        spec["NodeSelector"] = node_selection
    elif node_selection == "nodeSelectionAll":
        spec["AllNodes"] = True
    elif node_selection == "nodeSelectionPerDevice":
        spec["PerDeviceNodeSelection"] = True
    else:
        spec["NodeName"] = node_selection
    return Struct(ObjectMeta=meta(name), Spec=spec)


def slice_with_devices(
    name: str, node_selection: Any, pool: Any, driver: str, *devices: Any
) -> Struct:
    out = a_slice(name, node_selection, pool, driver)
    if devices:
        out["Spec"]["Devices"] = [strip(d) for d in devices]
    return out


def slice_with_counter_sets(
    name: str, node_selection: Any, pool: Any, driver: str, *sets: Any
) -> Struct:
    out = a_slice(name, node_selection, pool, driver)
    out["Spec"]["SharedCounters"] = list(sets)
    return out


def strip(d: Any) -> Any:
    if isinstance(d, dict):
        d = copy.deepcopy(d)
        d.pop("__fromCounters", None)
    return d


def allocation(
    request_: str, driver: str, pool: str, device_: str, admin: bool = False, *tolerations: Any
) -> Struct:
    out = Struct(
        Request=request_,
        Driver=driver,
        Pool=pool,
        Device=device_,
        Tolerations=list(tolerations) or None,
    )
    if admin:
        out["AdminAccess"] = True
    return out


def allocation_bc(
    request_: str, driver: str, pool: str, device_: str, bc: Any, bfc: Any, *tolerations: Any
) -> Struct:
    return Struct(
        Request=request_,
        Driver=driver,
        Pool=pool,
        Device=device_,
        BindingConditions=bc,
        BindingFailureConditions=bfc,
        Tolerations=list(tolerations) or None,
    )


def node_label_selector(key: str, *values: str) -> Struct:
    return Struct(
        NodeSelectorTerms=[
            Struct(MatchExpressions=[Struct(Key=key, Operator="In", Values=list(values))])
        ]
    )


def local_node_selector(name: str) -> Struct:
    return Struct(
        NodeSelectorTerms=[
            Struct(MatchFields=[Struct(Key="metadata.name", Operator="In", Values=[name])])
        ]
    )


def allocation_result(selector_: Any, *results: Any) -> Struct:
    return Struct(Devices=Struct(Results=list(results)), NodeSelector=selector_)


def allocation_result_with_config(
    selector_: Any, driver: str, source: str, attribute: str, *results: Any
) -> Struct:
    return Struct(
        Devices=Struct(
            Results=list(results),
            Config=[
                Struct(Source=source, DeviceConfiguration=device_configuration(driver, attribute))
            ],
        ),
        NodeSelector=selector_,
    )


def allocation_result_with_configs(selector_: Any, results: Any, configs: Any) -> Struct:
    return Struct(Devices=Struct(Results=results, Config=configs), NodeSelector=selector_)


def multiple_results(request_: str, driver: str, pool: str, count: int, start: int) -> list[Struct]:
    return [allocation(request_, driver, pool, f"device-{i}") for i in range(start, start + count)]


def with_capacity_request(obj: Any, quantity: Any) -> Any:
    out = copy.deepcopy(obj)
    target = out.get("Exactly", out)
    target["Capacity"] = Struct(Requests={"capacity-0": quantity} if quantity is not None else {})
    return out


def set_field(key: str) -> Callable[..., Any]:
    def method(obj: Any, *values: Any) -> Any:
        out = copy.deepcopy(obj)
        out[key] = list(values)
        return out

    return method


def with_taints(obj: Any, *taints: Any) -> Any:
    out = strip(obj)
    out["Taints"] = (out.get("Taints") or []) + list(taints)
    return out


def with_consumption(obj: Any, *consumptions: Any) -> Any:
    out = copy.deepcopy(obj)
    from_counters = out.pop("__fromCounters", False)
    out["ConsumesCounters"] = (out.get("ConsumesCounters") or []) + list(consumptions)
    if from_counters:
        out["Capacity"] = {
            name: Struct(Value=c["Value"])
            for dcc in out["ConsumesCounters"]
            for name, c in dcc["Counters"].items()
        }
    return out


def with_node_selection(obj: Any, selection: Any) -> Any:
    out = strip(obj)
    if isinstance(selection, dict):
        out["NodeSelector"] = selection
    elif selection == "nodeSelectionAll":
        out["AllNodes"] = True
    else:
        out["NodeName"] = selection
    return out


def with_binding_conditions(obj: Any, bc: Any, bfc: Any) -> Any:
    out = strip(obj)
    out["BindingConditions"] = bc
    out["BindingFailureConditions"] = bfc
    return out


def with_policy_range(obj: Any, capacity: dict[str, Any]) -> Any:
    out = strip(obj)
    caps = out.get("Capacity") or {}
    for name, quantity in capacity.items():
        caps[name] = Struct(
            Value=quantity,
            RequestPolicy=Struct(
                Default=Q("2"), ValidRange=Struct(Min=Q("2"), Step=Q("2"), Max=Q("4"))
            ),
        )
    out["Capacity"] = caps
    return out


def with_policy_values(obj: Any, default: Any, capacity: dict[str, Any], extra: Any) -> Any:
    out = strip(obj)
    caps = out.get("Capacity") or {}
    for name, quantity in capacity.items():
        caps[name] = Struct(
            Value=quantity,
            RequestPolicy=Struct(Default=default, ValidValues=[default, *(extra or [])]),
        )
    out["Capacity"] = caps
    return out


def with_tolerations(obj: Any, *tolerations: Any) -> Any:
    out = copy.deepcopy(obj)
    for r in out["Spec"]["Devices"]["Requests"]:
        r["Exactly"]["Tolerations"] = (r["Exactly"].get("Tolerations") or []) + list(tolerations)
    return out


def with_devices_field(key: str) -> Callable[..., Any]:
    def method(obj: Any, *values: Any) -> Any:
        out = copy.deepcopy(obj)
        devices = out.setdefault("Spec", Struct()).setdefault("Devices", Struct())
        devices[key] = values[0] if key == "Config" else list(values)
        return out

    return method


def with_exactly_field(key: str) -> Callable[..., Any]:
    def method(obj: Any, *values: Any) -> Any:
        out = copy.deepcopy(obj)
        out["Exactly"][key] = list(values)
        return out

    return method


def with_allocation_mode(obj: Any, mode: str) -> Any:
    out = copy.deepcopy(obj)
    out["AllocationMode"] = mode
    return out


def with_consumed_capacity(obj: Any, share: Any, consumed: Any) -> Any:
    out = copy.deepcopy(obj)
    out["ShareID"] = share
    out["ConsumedCapacity"] = consumed
    return out


def flag(key: str, value: Any) -> Callable[..., Any]:
    def method(obj: Any) -> Any:
        out = strip(obj)
        out[key] = value
        return out

    return method


METHODS: dict[str, Callable[..., Any]] = {
    "obj": lambda o: o,
    "DeepCopy": lambda o: copy.deepcopy(o),
    "withTaints": with_taints,
    "withDeviceCounterConsumption": with_consumption,
    "withNodeSelection": with_node_selection,
    "withBindingConditions": with_binding_conditions,
    "withBindsToNode": lambda o, v: flag("BindsToNode", v)(o),
    "withAllowMultipleAllocations": flag("AllowMultipleAllocations", True),
    "withCapacityRequestPolicyRange": with_policy_range,
    "withCapacityRequestPolicyValidValues": with_policy_values,
    "withCapacityRequest": with_capacity_request,
    "withSelectors": with_exactly_field("Selectors"),
    "withAllocationMode": with_allocation_mode,
    "withTolerations": with_tolerations,
    "withRequests": with_devices_field("Requests"),
    "withConstraints": with_devices_field("Constraints"),
    "withConfigs": with_devices_field("Config"),
    "withConsumedCapacity": with_consumed_capacity,
}


def call_method(value: Any, name: str, args: list[Any]) -> Any:
    if name not in METHODS:
        raise NameError(f"unknown method {name}")
    return METHODS[name](value, *args)


HELPERS: dict[str, Any] = {
    "node": node,
    "class": device_class,
    "classWithAllowMultipleAllocations": class_multi,
    "deviceConfiguration": device_configuration,
    "classWithConfig": class_with_config,
    "claimWithRequests": claim_with_requests,
    "request": request,
    "deviceRequest": lambda n, c, k: request(n, c, k),
    "allDeviceRequest": all_request,
    "subRequest": sub_request,
    "requestWithPrioritizedList": prioritized,
    "claimWithRequest": claim_with_request,
    "claim": claim,
    "claimWithDeviceConfig": claim_with_device_config,
    "deviceClaimConfig": device_claim_config,
    "device": device,
    "deviceCounterConsumption": consumption,
    "slice": a_slice,
    "sliceWithDevices": slice_with_devices,
    "sliceWithCounterSets": slice_with_counter_sets,
    "sliceWithNoDevices": lambda n, s, p, d: slice_with_devices(n, s, p, d),
    "sliceWithOneDevice": lambda n, s, p, d: slice_with_devices(
        n, s, p, d, device("device-1", None, None)
    ),
    "sliceWithMultipleDevices": lambda n, s, p, d, k: slice_with_devices(
        n, s, p, d, *[device(f"device-{i}", None, None) for i in range(k)]
    ),
    "counterSet": counter_set,
    "resourcePool": resource_pool,
    "deviceAllocationResult": allocation,
    "deviceRequestAllocationResult": lambda r, d, p, v: allocation(r, d, p, v),
    "deviceRequestAllocationResultWithBindingConditions": allocation_bc,
    "capacityRequests": lambda q: Struct(Requests={"capacity-0": q} if q is not None else {}),
    "requirements": lambda q: {"capacity-0": q} if q is not None else {},
    "multipleDeviceAllocationResults": multiple_results,
    "nodeLabelSelector": node_label_selector,
    "localNodeSelector": local_node_selector,
    "allocationResult": allocation_result,
    "allocationResultWithConfig": allocation_result_with_config,
    "allocationResultWithConfigs": allocation_result_with_configs,
    "objects": lambda *xs: list(xs),
    "unwrap": lambda *xs: [strip(x) for x in xs],
    "unwrapResourceSlices": lambda *xs: [strip(x) for x in xs],
    "MakeDeviceID": lambda d, p, v: f"{d}/{p}/{v}",
    "internal.MakeSharedDeviceID": lambda i, s: f"{i}#{s}",
    "sets.New": lambda *xs: list(xs),
    "slices.Concat": lambda *xs: [x for part in xs for x in part],
    "fmt.Sprintf": sprintf,
    "ptr.To": lambda x: copy.deepcopy(x),
    "resource.MustParse": Q,
    "resource.NewQuantity": lambda n, _f: Q(str(n)),
    "resource.BinarySI": "BinarySI",
    "resource.DecimalSI": "DecimalSI",
    "gomega.MatchError": lambda x: {"error": x},
    "gomega.ContainSubstring": lambda s: s,
    "resourceapi.DeviceAllocationModeExactCount": "ExactCount",
    "resourceapi.DeviceAllocationModeAll": "All",
    "resourceapi.DeviceTaintEffectNone": "None",
    "resourceapi.DeviceTaintEffectNoSchedule": "NoSchedule",
    "resourceapi.DeviceTaintEffectNoExecute": "NoExecute",
    "resourceapi.DeviceTolerationOpExists": "Exists",
    "resourceapi.DeviceTolerationOpEqual": "Equal",
    "resourceapi.AllocationConfigSourceClass": "FromClass",
    "resourceapi.AllocationConfigSourceClaim": "FromClaim",
    "resourceapi.AllocationResultsMaxSize": 32,
    "v1.NodeSelectorOpIn": "In",
    "internal.Stable": "stable",
    "internal.Incubating": "incubating",
    "internal.Experimental": "experimental",
}


# ---------------------------------------------------------------- to Kubernetes JSON

JSON_NAMES = {
    "ObjectMeta": "metadata",
    "CEL": "cel",
    "StringValue": "string",
    "IntValue": "int",
    "BoolValue": "bool",
    "VersionValue": "version",
    "StringValues": "strings",
    "IntValues": "ints",
    "BoolValues": "bools",
    "VersionValues": "versions",
    "ShareID": "shareID",
}
INLINE = {"DeviceConfiguration"}


def to_json(value: Any) -> Any:
    if isinstance(value, Struct):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key.startswith("__") or item is None:
                continue
            if key in INLINE:
                out.update(to_json(item))
                continue
            out[JSON_NAMES.get(key, key[0].lower() + key[1:])] = to_json(item)
        return out
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [to_json(v) for v in value]
    if isinstance(value, Q):
        return str(value)
    return value


def main(paths: list[str]) -> None:
    out: list[dict[str, Any]] = []
    shared = dict(HELPERS)
    sources = [tokens(Path(path).read_text()) for path in paths]
    for toks in sources:  # constants of every file first: later files use the first's
        ev = Evaluator(toks, shared)
        ev.consts()
    for toks in sources:
        ev = Evaluator(toks, shared)
        function = next(
            toks[k + 1].text
            for k, tok in enumerate(toks)
            if tok.text == "func" and toks[k + 1].text.startswith("Test")
        )
        for name, case in ev.run_function(function).items():
            entry = {"name": name, "file": function, "line": case.pop("__line")}
            entry.update(to_json(case))
            out.append(entry)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])

"""The checked CEL abstract syntax tree, read from and written back to its protobuf form.

The library compiles and type-checks an expression and can serialize the result as a
``cel.expr.CheckedExpr`` (wrapped in ``google.protobuf.Any``) and plan a program from such
bytes. Reading that tree gives this package what the library does not expose: an estimated
cost, checks of its own, and rewrites of the Kubernetes functions into native CEL.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from .. import protowire as wire
from ..protowire import Field

CHECKED_EXPR_TYPE_URL = "type.googleapis.com/cel.expr.CheckedExpr"

ConstKind = Literal["null", "bool", "int", "uint", "double", "string", "bytes"]
ConstValue = None | bool | int | float | str | bytes


@dataclass(eq=False)
class Expr:
    id: int
    raw: bytes | None = field(default=None, kw_only=True, repr=False)
    """The serialized node as decoded; None once it or anything below it changed."""

    def children(self) -> Iterator[Expr]:
        return iter(())


@dataclass(eq=False)
class Const(Expr):
    kind: ConstKind
    value: ConstValue


@dataclass(eq=False)
class Ident(Expr):
    name: str


@dataclass(eq=False)
class Select(Expr):
    operand: Expr
    field: str
    test_only: bool = False

    def children(self) -> Iterator[Expr]:
        yield self.operand


@dataclass(eq=False)
class Call(Expr):
    function: str
    args: list[Expr]
    target: Expr | None = None

    def children(self) -> Iterator[Expr]:
        if self.target is not None:
            yield self.target
        yield from self.args


@dataclass(eq=False)
class CreateList(Expr):
    elements: list[Expr]
    optional_indices: list[int] = field(default_factory=list)

    def children(self) -> Iterator[Expr]:
        yield from self.elements


@dataclass(eq=False)
class Entry:
    id: int
    key: Expr | str  # an expression for map literals, a field name for messages
    value: Expr
    optional: bool = False


@dataclass(eq=False)
class CreateStruct(Expr):
    """A map literal (``message_name`` empty) or a message literal."""

    entries: list[Entry]
    message_name: str = ""

    def children(self) -> Iterator[Expr]:
        for e in self.entries:
            if isinstance(e.key, Expr):
                yield e.key
            yield e.value


@dataclass(eq=False)
class Comprehension(Expr):
    iter_var: str
    iter_range: Expr
    accu_var: str
    accu_init: Expr
    loop_condition: Expr
    loop_step: Expr
    result: Expr
    iter_var2: str = ""

    def children(self) -> Iterator[Expr]:
        yield self.iter_range
        yield self.accu_init
        yield self.loop_condition
        yield self.loop_step
        yield self.result


@dataclass(frozen=True)
class Type:
    """A CEL type as the checker reports it; ``kind`` names the variant."""

    kind: str  # dyn null primitive wrapper well_known list map function message type_param type error abstract
    name: str = ""
    params: tuple[Type, ...] = ()

    def __str__(self) -> str:
        if self.kind in ("primitive", "well_known", "message", "type_param", "abstract"):
            base = self.name
        elif self.kind == "list":
            base = "list"
        elif self.kind == "map":
            base = "map"
        elif self.kind == "wrapper":
            return f"wrapper({self.name})"
        else:
            base = self.kind
        if self.params:
            return f"{base}({', '.join(str(p) for p in self.params)})"
        return base


DYN = Type("dyn")


@dataclass
class CheckedAst:
    """A checked expression: the tree, and the checker's tables kept as the bytes they came in.

    The reference and type tables are decoded only for the nodes asked about, and written back
    as they were for the nodes still in the tree: most of a large expression is never looked at.
    """

    expr: Expr
    raw_references: dict[int, bytes]  # node id -> serialized map entry
    raw_types: dict[int, bytes]  # node id -> serialized map entry
    raw_source_info: bytes
    expr_version: str = ""
    next_id: int = 0
    _types: dict[int, Type] = field(default_factory=dict, repr=False)
    _positions: dict[int, int] | None = field(default=None, repr=False)
    _line_offsets: list[int] = field(default_factory=list, repr=False)

    def type_of(self, node: Expr) -> Type:
        """The checked type of a node (DYN when the checker recorded none)."""
        found = self._types.get(node.id)
        if found is None:
            entry = self.raw_types.get(node.id)
            found = decode_type(_map_entry(entry)[1]) if entry is not None else DYN
            self._types[node.id] = found
        return found

    def overloads(self, node: Expr) -> list[str]:
        """The overload ids the checker resolved a call to."""
        entry = self.raw_references.get(node.id)
        if entry is None:
            return []
        return [_str(v) for n, _, v in wire.decode(_map_entry(entry)[1]) if n == 3]

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    @property
    def positions(self) -> dict[int, int]:
        """Node id -> code-point offset in the expression, for the nodes the parser placed."""
        if self._positions is None:
            self._positions = {}
            for n, wt, v in wire.decode(self.raw_source_info):
                if n == 3:
                    self._line_offsets += _repeated_int(wt, v)
                elif n == 4:
                    key, pos = _map_entry_ints(_bytes(v))
                    self._positions[key] = pos
        return self._positions

    def location(self, node: Expr) -> tuple[int, int] | None:
        """(line, column), both 1-based, of a node the parser placed; None for synthetic ones."""
        offset = self.positions.get(node.id)
        if offset is None:
            return None
        line = 1
        start = 0
        for brk in self._line_offsets:
            if brk > offset:
                break
            line += 1
            start = brk
        return line, offset - start + 1


# -- decoding ---------------------------------------------------------------------------


def _str(v: int | bytes) -> str:
    assert isinstance(v, bytes)
    return v.decode()


def _bytes(v: int | bytes) -> bytes:
    assert isinstance(v, bytes)
    return v


def _int(v: int | bytes) -> int:
    assert isinstance(v, int)
    return v


def _decode_const(buf: bytes, node_id: int) -> Const:
    for num, wt, v in wire.decode(buf):
        if num == 1:
            return Const(node_id, "null", None)
        if num == 2:
            return Const(node_id, "bool", bool(_int(v)))
        if num == 3:
            return Const(node_id, "int", wire.signed64(_int(v)))
        if num == 4:
            return Const(node_id, "uint", _int(v))
        if num == 5 and wt == wire.FIXED64:
            return Const(node_id, "double", wire.double(_int(v)))
        if num == 6:
            return Const(node_id, "string", _str(v))
        if num == 7:
            return Const(node_id, "bytes", _bytes(v))
    raise wire.WireError("unsupported constant")


def _repeated_int(wt: int, v: int | bytes) -> list[int]:
    if wt == wire.LEN:
        out: list[int] = []
        buf = _bytes(v)
        pos = 0
        while pos < len(buf):
            n, pos = wire.read_varint(buf, pos)
            out.append(wire.signed64(n))
        return out
    return [wire.signed64(_int(v))]


def decode_expr(buf: bytes) -> Expr:
    node = _decode_expr(buf)
    node.raw = buf
    return node


def _decode_expr(buf: bytes) -> Expr:
    fields = wire.decode(buf)
    node_id = 0
    body: tuple[int, bytes] | None = None
    for num, _wt, v in fields:
        if num == 2:
            node_id = wire.signed64(_int(v))
        elif 3 <= num <= 9:
            body = (num, _bytes(v))
    if body is None:
        raise wire.WireError("expression without a kind")
    kind, data = body
    sub = wire.decode(data)
    if kind == 3:
        return _decode_const(data, node_id)
    if kind == 4:
        name = next((_str(v) for n, _, v in sub if n == 1), "")
        return Ident(node_id, name)
    if kind == 5:
        return _decode_select(node_id, sub)
    if kind == 6:
        return _decode_call(node_id, sub)
    if kind == 7:
        return _decode_list(node_id, sub)
    if kind == 8:
        return _decode_struct(node_id, sub)
    # kind == 9
    return _decode_comprehension(node_id, sub)


def _decode_select(node_id: int, sub: list[Field]) -> Select:
    operand: Expr | None = None
    fname = ""
    test_only = False
    for n, _, v in sub:
        if n == 1:
            operand = decode_expr(_bytes(v))
        elif n == 2:
            fname = _str(v)
        elif n == 3:
            test_only = bool(_int(v))
    if operand is None:
        raise wire.WireError("select without operand")
    return Select(node_id, operand, fname, test_only)


def _decode_call(node_id: int, sub: list[Field]) -> Call:
    target: Expr | None = None
    function = ""
    args: list[Expr] = []
    for n, _, v in sub:
        if n == 1:
            target = decode_expr(_bytes(v))
        elif n == 2:
            function = _str(v)
        elif n == 3:
            args.append(decode_expr(_bytes(v)))
    return Call(node_id, function, args, target)


def _decode_list(node_id: int, sub: list[Field]) -> CreateList:
    elements: list[Expr] = []
    optional: list[int] = []
    for n, wt, v in sub:
        if n == 1:
            elements.append(decode_expr(_bytes(v)))
        elif n == 2:
            optional += _repeated_int(wt, v)
    return CreateList(node_id, elements, optional)


def _decode_struct(node_id: int, sub: list[Field]) -> CreateStruct:
    entries: list[Entry] = []
    message_name = ""
    for n, _, v in sub:
        if n == 1:
            message_name = _str(v)
        elif n == 2:
            entries.append(_decode_entry(_bytes(v)))
    return CreateStruct(node_id, entries, message_name)


def _decode_comprehension(node_id: int, sub: list[Field]) -> Comprehension:
    parts: dict[int, int | bytes] = {n: v for n, _, v in sub}

    def part(n: int) -> Expr:
        if n not in parts:
            raise wire.WireError("incomplete comprehension")
        return decode_expr(_bytes(parts[n]))

    return Comprehension(
        node_id,
        iter_var=_str(parts.get(1, b"")),
        iter_range=part(2),
        accu_var=_str(parts.get(3, b"")),
        accu_init=part(4),
        loop_condition=part(5),
        loop_step=part(6),
        result=part(7),
        iter_var2=_str(parts.get(8, b"")),
    )


def _decode_entry(buf: bytes) -> Entry:
    entry_id = 0
    key: Expr | str | None = None
    value: Expr | None = None
    optional = False
    for n, _, v in wire.decode(buf):
        if n == 1:
            entry_id = wire.signed64(_int(v))
        elif n == 2:
            key = _str(v)
        elif n == 3:
            key = decode_expr(_bytes(v))
        elif n == 4:
            value = decode_expr(_bytes(v))
        elif n == 5:
            optional = bool(_int(v))
    if key is None or value is None:
        raise wire.WireError("incomplete literal entry")
    return Entry(entry_id, key, value, optional)


_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN = {1: "any", 2: "timestamp", 3: "duration"}


def decode_type(buf: bytes) -> Type:
    for num, _wt, v in wire.decode(buf):
        if num == 1:
            return DYN
        if num == 2:
            return Type("null")
        if num == 3:
            return Type("primitive", _PRIMITIVES.get(_int(v), "?"))
        if num == 4:
            return Type("wrapper", _PRIMITIVES.get(_int(v), "?"))
        if num == 5:
            return Type("well_known", _WELL_KNOWN.get(_int(v), "?"))
        if num == 6:
            elem = [decode_type(_bytes(x)) for n, _, x in wire.decode(_bytes(v)) if n == 1]
            return Type("list", params=(elem[0] if elem else DYN,))
        if num == 7:
            kv = {n: decode_type(_bytes(x)) for n, _, x in wire.decode(_bytes(v))}
            return Type("map", params=(kv.get(1, DYN), kv.get(2, DYN)))
        if num == 8:
            return Type("function")
        if num == 9:
            return Type("message", _str(v))
        if num == 10:
            return Type("type_param", _str(v))
        if num == 11:
            return Type("type", params=(decode_type(_bytes(v)),))
        if num == 12:
            return Type("error")
        if num == 14:
            name = ""
            params: list[Type] = []
            for n, _, x in wire.decode(_bytes(v)):
                if n == 1:
                    name = _str(x)
                elif n == 2:
                    params.append(decode_type(_bytes(x)))
            return Type("abstract", name, tuple(params))
    return DYN


def _map_entry(buf: bytes) -> tuple[int, bytes]:
    """(key, value bytes) of a ``map<int64, Message>`` entry."""
    key = 0
    value = b""
    for n, _, v in wire.decode(buf):
        if n == 1:
            key = wire.signed64(_int(v))
        elif n == 2:
            value = _bytes(v)
    return key, value


def _map_entry_ints(buf: bytes) -> tuple[int, int]:
    key, value = 0, 0
    for n, _, v in wire.decode(buf):
        if n == 1:
            key = wire.signed64(_int(v))
        elif n == 2:
            value = wire.signed64(_int(v))
    return key, value


def _entry_key(buf: bytes) -> int:
    """The key of a map entry; fast when it comes first, as serializers write it."""
    if buf and buf[0] == 0x08:
        key, _ = wire.read_varint(buf, 1)
        return wire.signed64(key)
    return _map_entry(buf)[0]


def _max_id(node: Expr) -> int:
    best = node.id
    stack = [node]
    while stack:
        n = stack.pop()
        best = max(best, n.id)
        if isinstance(n, CreateStruct):
            best = max([best, *(e.id for e in n.entries)])
        stack.extend(n.children())
    return best


def decode_checked(serialized: bytes) -> CheckedAst:
    """Read what the library's ``Expression.serialize()`` returns."""
    payload = serialized
    outer = wire.decode(serialized)
    urls = [_str(v) for n, _, v in outer if n == 1]
    if urls:
        if urls[0] != CHECKED_EXPR_TYPE_URL:
            raise wire.WireError(f"unexpected payload {urls[0]}")
        payload = next(_bytes(v) for n, _, v in outer if n == 2)
    expr: Expr | None = None
    references: dict[int, bytes] = {}
    types: dict[int, bytes] = {}
    source_info = b""
    version = ""
    for num, _wt, v in wire.decode(payload):
        if num == 2:
            references[_entry_key(_bytes(v))] = _bytes(v)
        elif num == 3:
            types[_entry_key(_bytes(v))] = _bytes(v)
        elif num == 4:
            expr = decode_expr(_bytes(v))
        elif num == 5:
            source_info = _bytes(v)
        elif num == 6:
            version = _str(v)
    if expr is None:
        raise wire.WireError("checked expression without an expression")
    checked = CheckedAst(
        expr=expr,
        raw_references=references,
        raw_types=types,
        raw_source_info=source_info,
        expr_version=version,
    )
    checked.next_id = max(_max_id(expr), *references, *types, 0)
    return checked


# -- encoding ---------------------------------------------------------------------------


def _encode_const(node: Const) -> list[Field]:
    v = node.value
    if node.kind == "null":
        return [wire.varint_field(1, 0)]
    if node.kind == "bool":
        return [wire.varint_field(2, int(bool(v)))]
    if node.kind == "int":
        assert isinstance(v, int)
        return [wire.varint_field(3, v)]
    if node.kind == "uint":
        assert isinstance(v, int)
        return [wire.varint_field(4, v)]
    if node.kind == "double":
        assert isinstance(v, float | int)
        return [(5, wire.FIXED64, wire.double_bits(float(v)))]
    if node.kind == "string":
        assert isinstance(v, str)
        return [wire.string_field(6, v)]
    assert isinstance(v, bytes)
    return [wire.bytes_field(7, v)]


def encode_expr(node: Expr) -> bytes:
    if node.raw is not None:
        return node.raw
    body: list[Field]
    if isinstance(node, Const):
        kind, body = 3, _encode_const(node)
    elif isinstance(node, Ident):
        kind, body = 4, [wire.string_field(1, node.name)]
    elif isinstance(node, Select):
        kind = 5
        body = [wire.bytes_field(1, encode_expr(node.operand)), wire.string_field(2, node.field)]
        if node.test_only:
            body.append(wire.varint_field(3, 1))
    elif isinstance(node, Call):
        kind = 6
        body = []
        if node.target is not None:
            body.append(wire.bytes_field(1, encode_expr(node.target)))
        body.append(wire.string_field(2, node.function))
        body += [wire.bytes_field(3, encode_expr(a)) for a in node.args]
    elif isinstance(node, CreateList):
        kind = 7
        body = [wire.bytes_field(1, encode_expr(e)) for e in node.elements]
        body += [wire.varint_field(2, i) for i in node.optional_indices]
    elif isinstance(node, CreateStruct):
        kind = 8
        body = []
        if node.message_name:
            body.append(wire.string_field(1, node.message_name))
        for e in node.entries:
            entry: list[Field] = [wire.varint_field(1, e.id)]
            if isinstance(e.key, str):
                entry.append(wire.string_field(2, e.key))
            else:
                entry.append(wire.bytes_field(3, encode_expr(e.key)))
            entry.append(wire.bytes_field(4, encode_expr(e.value)))
            if e.optional:
                entry.append(wire.varint_field(5, 1))
            body.append(wire.message_field(2, entry))
    elif isinstance(node, Comprehension):
        kind = 9
        body = [
            wire.string_field(1, node.iter_var),
            wire.bytes_field(2, encode_expr(node.iter_range)),
            wire.string_field(3, node.accu_var),
            wire.bytes_field(4, encode_expr(node.accu_init)),
            wire.bytes_field(5, encode_expr(node.loop_condition)),
            wire.bytes_field(6, encode_expr(node.loop_step)),
            wire.bytes_field(7, encode_expr(node.result)),
        ]
        if node.iter_var2:
            body.append(wire.string_field(8, node.iter_var2))
    else:  # pragma: no cover - every subclass is handled above
        raise TypeError(type(node).__name__)
    return wire.encode([wire.varint_field(2, node.id), wire.message_field(kind, body)])


def encode_checked(ast: CheckedAst) -> bytes:
    """Bytes the library's ``Env.deserialize`` plans a program from."""
    ids = set(_all_ids(ast.expr))
    fields: list[Field] = [
        wire.bytes_field(2, entry) for key, entry in ast.raw_references.items() if key in ids
    ]
    fields += [wire.bytes_field(3, entry) for key, entry in ast.raw_types.items() if key in ids]
    fields.append(wire.bytes_field(4, encode_expr(ast.expr)))
    fields.append(wire.bytes_field(5, ast.raw_source_info))
    if ast.expr_version:
        fields.append(wire.string_field(6, ast.expr_version))
    payload = wire.encode(fields)
    return wire.encode([wire.string_field(1, CHECKED_EXPR_TYPE_URL), wire.bytes_field(2, payload)])


def _all_ids(node: Expr) -> Iterator[int]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n.id
        if isinstance(n, CreateStruct):
            yield from (e.id for e in n.entries)
        stack.extend(n.children())


def walk(node: Expr) -> Iterator[Expr]:
    """Every node of a tree, parents before children."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(n.children())))

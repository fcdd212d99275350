"""Kubernetes' protobuf encoding, read into the JSON form: the wire format and meta/v1 shapes.

Built-in clients (kubectl's ``create rolebinding``, ``auth can-i`` and friends) send the
kinds Kubernetes itself defines in protobuf. A ``Message`` maps field numbers to JSON names
and value types, as the upstream ``generated.proto`` files number them; decoding gives the
dict the JSON encoding of the same object would, leaving out the empty values Go's
``omitempty`` leaves out (the Go encoder writes every scalar, even empty ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import protowire as wire

Scalar = Literal["string", "int", "bool", "map", "extra"]
"""``map``: map<string,string>; ``extra``: map<string, {repeated string items = 1}>."""


class ProtobufError(ValueError):
    """The bytes are not a well-formed message of the expected shape."""


@dataclass(frozen=True)
class Field:
    name: str
    type: Scalar | Message
    repeated: bool = False


@dataclass(frozen=True)
class Message:
    fields: Mapping[int, Field] = field(default_factory=dict)


def fields_of(data: bytes) -> list[tuple[int, int | bytes]]:
    """Every (field number, value) of a message; varints as ints, the rest as bytes."""
    try:
        fields = wire.decode(data)
    except wire.WireError as err:
        raise ProtobufError(str(err)) from err
    width = {wire.FIXED64: 8, wire.FIXED32: 4}
    out: list[tuple[int, int | bytes]] = []
    for number, kind, value in fields:
        if kind in width and isinstance(value, int):
            value = value.to_bytes(width[kind], "little")
        out.append((number, value))
    return out


def _bytes(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a length-delimited field")
    return value


def _int(value: int | bytes) -> int:
    if not isinstance(value, int):
        raise ProtobufError("expected a varint field")
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: int | bytes) -> str:
    try:
        return _bytes(value).decode()
    except UnicodeDecodeError as err:
        raise ProtobufError("a string field is not UTF-8") from err


def _entry(value: int | bytes) -> tuple[str, int | bytes]:
    key = ""
    item: int | bytes = b""
    for number, v in fields_of(_bytes(value)):
        if number == 1:
            key = _text(v)
        elif number == 2:
            item = v
    return key, item


def _scalar(kind: Scalar, value: int | bytes) -> Any:
    if kind == "string":
        return _text(value)
    if kind == "int":
        return _int(value)
    if kind == "bool":
        return bool(_int(value))
    raise ProtobufError(f"no scalar type {kind}")


def decode(message: Message, data: bytes) -> dict[str, Any]:
    """The JSON form of ``data`` read as ``message``; unknown field numbers are skipped."""
    out: dict[str, Any] = {}
    for number, value in fields_of(data):
        spec = message.fields.get(number)
        if spec is None:
            continue
        if spec.type == "map":
            key, item = _entry(value)
            out.setdefault(spec.name, {})[key] = _text(item) if item != b"" else ""
            continue
        if spec.type == "extra":
            key, item = _entry(value)
            items = [_text(v) for n, v in fields_of(_bytes(item)) if n == 1]
            out.setdefault(spec.name, {})[key] = items
            continue
        decoded = (
            decode(spec.type, _bytes(value))
            if isinstance(spec.type, Message)
            else _scalar(spec.type, value)
        )
        if spec.repeated:
            out.setdefault(spec.name, []).append(decoded)
        else:
            out[spec.name] = decoded
    # What Go's omitempty leaves out of JSON (list items are kept as sent).
    return {k: v for k, v in out.items() if v not in ("", 0, False, None)}


def message(**fields: tuple[int, Scalar | Message] | tuple[int, Scalar | Message, bool]) -> Message:
    """``message(name=(1, "string"), items=(2, Item, True))``: JSON names with numbers."""
    spec: dict[int, Field] = {}
    for name, entry in fields.items():
        number, kind = entry[0], entry[1]
        spec[number] = Field(name, kind, len(entry) > 2 and bool(entry[2]))
    return Message(spec)


# -- meta/v1 -------------------------------------------------------------------------

OWNER_REFERENCE = message(
    apiVersion=(5, "string"),
    kind=(1, "string"),
    name=(3, "string"),
    uid=(4, "string"),
    controller=(6, "bool"),
    blockOwnerDeletion=(7, "bool"),
)
# What a client may set; server-set metadata (uid, generation, timestamps, managed fields)
# is not read, since a create or an update ignores it anyway.
OBJECT_META = message(
    name=(1, "string"),
    generateName=(2, "string"),
    namespace=(3, "string"),
    resourceVersion=(6, "string"),
    labels=(11, "map"),
    annotations=(12, "map"),
    ownerReferences=(13, OWNER_REFERENCE, True),
    finalizers=(14, "string", True),
)
LABEL_SELECTOR_REQUIREMENT = message(
    key=(1, "string"), operator=(2, "string"), values=(3, "string", True)
)
LABEL_SELECTOR = message(
    matchLabels=(1, "map"), matchExpressions=(2, LABEL_SELECTOR_REQUIREMENT, True)
)

# runtime.Unknown, the envelope after the 4-byte magic: typeMeta = 1 (apiVersion = 1,
# kind = 2), raw = 2, contentEncoding = 3, contentType = 4.
MAGIC = b"k8s\x00"


@dataclass(frozen=True)
class Envelope:
    api_version: str
    kind: str
    raw: bytes


def envelope(body: bytes) -> Envelope:
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with the Kubernetes protobuf prefix")
    api_version = kind = ""
    raw = b""
    for number, value in fields_of(body[len(MAGIC) :]):
        if number == 1:
            for n, v in fields_of(_bytes(value)):
                if n == 1:
                    api_version = _text(v)
                elif n == 2:
                    kind = _text(v)
        elif number == 2:
            raw = _bytes(value)
        elif number == 3 and _bytes(value):
            raise ProtobufError("compressed protobuf bodies are not supported")
    return Envelope(api_version, kind, raw)

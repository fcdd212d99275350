"""The protocol-buffers wire format, with no schema: what every protobuf reader and writer
of the server shares (the checked CEL AST, Kubernetes' protobuf request bodies, the
protobuf OpenAPI v2 document).

A message is a list of ``(field number, wire type, value)``; the value is an ``int`` for
varint and fixed-width fields and ``bytes`` for length-delimited ones. The callers give the
fields their meaning.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

VARINT = 0
FIXED64 = 1
LEN = 2
FIXED32 = 5

Field = tuple[int, int, int | bytes]

_MASK64 = (1 << 64) - 1


class WireError(ValueError):
    """The bytes are not a well-formed protocol-buffers message."""


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise WireError("truncated varint")
        b = buf[pos]
        pos += 1
        if shift == 63 and b > 1:
            # The tenth byte holds the 64th bit only: more is no 64-bit value.
            raise WireError("varint overflows 64 bits")
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def decode(buf: bytes) -> list[Field]:
    """Split one message into its fields, in wire order."""
    fields: list[Field] = []
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        number, wire_type = key >> 3, key & 7
        value: int | bytes
        if wire_type == VARINT:
            value, pos = read_varint(buf, pos)
        elif wire_type == LEN:
            size, pos = read_varint(buf, pos)
            if pos + size > len(buf):
                raise WireError("truncated length-delimited field")
            value = buf[pos : pos + size]
            pos += size
        elif wire_type == FIXED64:
            if pos + 8 > len(buf):
                raise WireError("truncated fixed64")
            value = int.from_bytes(buf[pos : pos + 8], "little")
            pos += 8
        elif wire_type == FIXED32:
            if pos + 4 > len(buf):
                raise WireError("truncated fixed32")
            value = int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        else:
            raise WireError(f"unsupported wire type {wire_type}")
        fields.append((number, wire_type, value))
    return fields


def varint(value: int) -> bytes:
    value &= _MASK64
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode(fields: Iterable[Field]) -> bytes:
    """The inverse of ``decode``."""
    out = bytearray()
    for number, wire_type, value in fields:
        out += varint(number << 3 | wire_type)
        if wire_type == VARINT:
            assert isinstance(value, int)
            out += varint(value)
        elif wire_type == LEN:
            assert isinstance(value, bytes)
            out += varint(len(value))
            out += value
        elif wire_type == FIXED64:
            assert isinstance(value, int)
            out += (value & _MASK64).to_bytes(8, "little")
        elif wire_type == FIXED32:
            assert isinstance(value, int)
            out += (value & 0xFFFFFFFF).to_bytes(4, "little")
        else:
            raise WireError(f"unsupported wire type {wire_type}")
    return bytes(out)


def signed64(value: int) -> int:
    """A varint read as an ``int64``."""
    return value - (1 << 64) if value >= 1 << 63 else value


def double(value: int) -> float:
    """A fixed64 read as a ``double``."""
    return float(struct.unpack("<d", value.to_bytes(8, "little"))[0])


def double_bits(value: float) -> int:
    return int.from_bytes(struct.pack("<d", value), "little")


def varint_field(number: int, value: int) -> Field:
    return (number, VARINT, value)


def bytes_field(number: int, value: bytes) -> Field:
    return (number, LEN, value)


def string_field(number: int, value: str) -> Field:
    return (number, LEN, value.encode())


def message_field(number: int, fields: Iterable[Field]) -> Field:
    return (number, LEN, encode(fields))

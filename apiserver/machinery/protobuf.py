"""Request bodies in the Kubernetes protobuf encoding, for the few kinds kubectl sends that way.

kubectl's generator commands (``kubectl create namespace``) write built-in kinds with a typed
client, which encodes the body as ``application/vnd.kubernetes.protobuf``: the magic bytes
``k8s\\0``, then a ``runtime.Unknown`` message holding the TypeMeta and the object's own
message. This module reads that envelope and turns the object into the JSON form the rest of
the server works with, for the kinds listed in ``SCHEMAS``; any other kind is 415. Fields a
schema does not name are skipped, as protobuf readers do; server-set metadata (uid,
timestamps, managed fields) is not read, since a create or update ignores it anyway.
"""

from __future__ import annotations

from typing import Any

from . import errors

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

# A schema maps a field number to (JSON name, type); a type is "string", "int", "bool",
# "strings" (repeated string), "map" (map<string, string>), or a nested schema (a message),
# optionally in a one-element list for a repeated message.
Schema = dict[int, tuple[str, Any]]

OBJECT_META: Schema = {
    1: ("name", "string"),
    2: ("generateName", "string"),
    3: ("namespace", "string"),
    6: ("resourceVersion", "string"),
    11: ("labels", "map"),
    12: ("annotations", "map"),
    14: ("finalizers", "strings"),
}
NAMESPACE: Schema = {
    1: ("metadata", OBJECT_META),
    2: ("spec", {1: ("finalizers", "strings")}),
    3: ("status", {1: ("phase", "string")}),
}
SCHEMAS: dict[tuple[str, str], Schema] = {("v1", "Namespace"): NAMESPACE}

_TYPE_META: Schema = {1: ("apiVersion", "string"), 2: ("kind", "string")}
_UNKNOWN: Schema = {1: ("typeMeta", _TYPE_META), 2: ("raw", "bytes")}


class _Malformed(ValueError):
    pass


def decode_object(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object; 400 if it is malformed, 415 for a kind
    this server does not read in protobuf."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("the request body is not a Kubernetes protobuf object")
    try:
        envelope = _message(body[len(MAGIC) :], _UNKNOWN)
        type_meta = envelope.get("typeMeta") or {}
        api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
        schema = SCHEMAS.get((api_version, kind))
        if schema is None:
            raise errors.unsupported_media_type(
                MEDIA_TYPE, ["application/json", "application/yaml"]
            )
        obj = _message(envelope.get("raw", b""), schema)
    except _Malformed as exc:
        raise errors.bad_request(f"the request body could not be decoded: {exc}") from exc
    return {"apiVersion": api_version, "kind": kind, **obj}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise _Malformed("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: an int for varints, bytes for anything else."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise _Malformed("truncated field")
            value, pos = data[pos : pos + length], pos + length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = data[pos : pos + size], pos + size
        else:
            raise _Malformed(f"unsupported wire type {wire}")
        out.append((number, value))
    return out


def _message(data: bytes, schema: Schema) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue
        name, kind = schema[number]
        if kind == "int" or kind == "bool":
            if not isinstance(value, int):
                raise _Malformed(f"{name}: expected a varint")
            obj[name] = bool(value) if kind == "bool" else value
            continue
        if not isinstance(value, bytes):
            raise _Malformed(f"{name}: expected a length-delimited field")
        if kind == "bytes":
            obj[name] = value
        elif kind in ("string", "strings"):
            text = _text(value, name)
            if kind == "string":
                obj[name] = text
            else:
                obj.setdefault(name, []).append(text)
        elif kind == "map":
            entry = _message(value, {1: ("key", "string"), 2: ("value", "string")})
            obj.setdefault(name, {})[entry.get("key", "")] = entry.get("value", "")
        elif isinstance(kind, list):
            obj.setdefault(name, []).append(_message(value, kind[0]))
        else:
            obj[name] = _message(value, kind)
    return obj


def _text(value: bytes, name: str) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Malformed(f"{name}: not UTF-8") from exc

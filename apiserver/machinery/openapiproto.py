"""The Swagger 2.0 document in the protobuf encoding kubectl asks ``/openapi/v2`` for.

kubectl reads OpenAPI v2 only as gnostic's ``openapi.v2.Document`` message. It does so when
OpenAPI v3 does not answer its question: before ``kubectl create`` of a kind with no PATCH
operation (a create-only review) it looks for the ``fieldValidation`` parameter there, and
a server that cannot answer in protobuf makes the create fail unless ``--validate=false``.

The encoder is driven by the message shapes of gnostic's ``OpenAPIv2.proto`` (field numbers
as numbered there), for the parts of Swagger 2.0 the served document uses; a key it does not
know is an error, so a document that grows a new keyword fails the tests rather than
losing it silently. Values gnostic holds as ``Any`` (defaults, enums, vendor extensions) are
written as YAML text, which JSON is.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..protowire import FIXED64, LEN, VARINT, varint

MEDIA_TYPES = (
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
)
"""What clients ask for. kubectl sends the second, older name, but an ``@`` is no valid
media type in a response header (Go's parser refuses it): the answer carries the first."""

Encoder = Callable[[int, Any], bytes]
"""Writes one field (its key and value) with the given number; nothing for an empty scalar."""


def _key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def _delimited(number: int, payload: bytes) -> bytes:
    return _key(number, LEN) + varint(len(payload)) + payload


def _string(number: int, value: Any) -> bytes:
    return _delimited(number, str(value).encode()) if value != "" else b""


def _bool(number: int, value: Any) -> bytes:
    return _key(number, VARINT) + b"\x01" if value else b""


def _int64(number: int, value: Any) -> bytes:
    return _key(number, VARINT) + varint(int(value)) if value else b""


def _double(number: int, value: Any) -> bytes:
    return _key(number, FIXED64) + struct.pack("<d", float(value)) if value else b""


def _any(number: int, value: Any) -> bytes:
    return _delimited(number, _string(2, orjson.dumps(value).decode()))  # Any.yaml


def _repeated(encoder: Encoder) -> Encoder:
    return lambda number, values: b"".join(encoder(number, v) for v in values)


def _named(encoder: Encoder) -> Encoder:
    """A JSON object as gnostic's ordered ``Named*`` pairs (name = 1, value = 2)."""
    return lambda number, mapping: b"".join(
        _delimited(number, _string(1, name) + encoder(2, value)) for name, value in mapping.items()
    )


def _wrapped(encoder: Encoder) -> Encoder:
    """A message whose only field 1 holds the value (``Definitions``, ``Properties``…)."""
    return lambda number, value: _delimited(number, encoder(1, value))


@dataclass
class _Shape:
    """One message: JSON key → (field number, encoder); ``x-`` keys go to ``extensions``."""

    fields: dict[str, tuple[int, Encoder]]
    extensions: int | None = None

    def encode(self, obj: Mapping[str, Any]) -> bytes:
        """The fields in field-number order (as Go writes them), whatever the JSON order."""
        fields: list[tuple[int, bytes]] = []
        extensions: dict[str, Any] = {}
        for key, value in obj.items():
            if key.startswith("x-") and self.extensions is not None:
                extensions[key] = value
                continue
            number, encoder = self.fields[key]  # KeyError: a keyword this encoder lacks
            fields.append((number, encoder(number, value)))
        if extensions and self.extensions is not None:
            fields.append((self.extensions, _named(_any)(self.extensions, extensions)))
        fields.sort(key=lambda field: field[0])
        return b"".join(encoded for _, encoded in fields)

    def field(self, number: int, value: Any) -> bytes:
        return _delimited(number, self.encode(value))


def _oneof(choose: Callable[[Any], tuple[int, Encoder]]) -> Encoder:
    """A message of one ``oneof``: ``choose`` picks the member's number and encoder."""

    def encode(number: int, value: Any) -> bytes:
        member, encoder = choose(value)
        return _delimited(number, encoder(member, value))

    return encode


_REF = {"$ref": (1, _string)}
_JSON_REFERENCE = _Shape({**_REF, "description": (2, _string)})

_SCHEMA = _Shape({}, extensions=31)
_SCHEMA.fields.update(
    {
        "$ref": (1, _string),
        "format": (2, _string),
        "title": (3, _string),
        "description": (4, _string),
        "default": (5, _any),
        "multipleOf": (6, _double),
        "maximum": (7, _double),
        "exclusiveMaximum": (8, _bool),
        "minimum": (9, _double),
        "exclusiveMinimum": (10, _bool),
        "maxLength": (11, _int64),
        "minLength": (12, _int64),
        "pattern": (13, _string),
        "maxItems": (14, _int64),
        "minItems": (15, _int64),
        "uniqueItems": (16, _bool),
        "maxProperties": (17, _int64),
        "minProperties": (18, _int64),
        "required": (19, _repeated(_string)),
        "enum": (20, _repeated(_any)),
        "additionalProperties": (
            21,
            _oneof(lambda v: (2, _bool) if isinstance(v, bool) else (1, _SCHEMA.field)),
        ),
        "type": (
            22,
            _wrapped(lambda n, v: _repeated(_string)(n, v if isinstance(v, list) else [v])),
        ),
        "items": (
            23,
            _wrapped(lambda n, v: _repeated(_SCHEMA.field)(n, v if isinstance(v, list) else [v])),
        ),
        "allOf": (24, _repeated(_SCHEMA.field)),
        "properties": (25, _wrapped(_named(_SCHEMA.field))),
        "discriminator": (26, _string),
        "readOnly": (27, _bool),
        "example": (30, _any),
    }
)

_PRIMITIVE_PARAMETER = {  # the fields every non-body parameter kind numbers alike
    "required": 1,
    "in": 2,
    "description": 3,
    "name": 4,
}
_SIMPLE_KEYWORDS: dict[str, Encoder] = {
    "type": _string,
    "format": _string,
    "collectionFormat": _string,
    "default": _any,
    "maximum": _double,
    "exclusiveMaximum": _bool,
    "minimum": _double,
    "exclusiveMinimum": _bool,
    "maxLength": _int64,
    "minLength": _int64,
    "pattern": _string,
    "maxItems": _int64,
    "minItems": _int64,
    "uniqueItems": _bool,
    "enum": _repeated(_any),
    "multipleOf": _double,
}


def _non_body(first: int, *, allow_empty_value: bool) -> _Shape:
    """A query, form, path or header parameter: four leading fields, then (query and form
    only) ``allowEmptyValue``, then the simple-schema keywords in Swagger's order from
    ``first``; ``items`` has its own slot after ``format``."""
    fields: dict[str, tuple[int, Encoder]] = {
        key: (number, _bool if key == "required" else _string)
        for key, number in _PRIMITIVE_PARAMETER.items()
    }
    if allow_empty_value:
        fields["allowEmptyValue"] = (5, _bool)
    number = first
    for key, encoder in _SIMPLE_KEYWORDS.items():
        fields[key] = (number, encoder)
        number += 2 if key == "format" else 1  # items sits between format and collectionFormat
    return _Shape(fields, extensions=number)


_QUERY = _non_body(6, allow_empty_value=True)
_FORM = _non_body(6, allow_empty_value=True)
_PATH = _non_body(5, allow_empty_value=False)
_HEADER = _non_body(5, allow_empty_value=False)
_BODY = _Shape(
    {
        "description": (1, _string),
        "name": (2, _string),
        "in": (3, _string),
        "required": (4, _bool),
        "schema": (5, _SCHEMA.field),
    },
    extensions=6,
)
_NON_BODY_MEMBER = {"header": (1, _HEADER), "formData": (2, _FORM), "query": (3, _QUERY)}


def _non_body_member(param: Mapping[str, Any]) -> tuple[int, Encoder]:
    member, shape = _NON_BODY_MEMBER.get(param.get("in", ""), (4, _PATH))
    return member, shape.field


def _parameter_member(param: Mapping[str, Any]) -> tuple[int, Encoder]:
    if param.get("in") == "body":
        return 1, _BODY.field
    return 2, _oneof(_non_body_member)


_PARAMETER: Encoder = _oneof(_parameter_member)
_PARAMETERS_ITEM: Encoder = _oneof(
    lambda p: (2, _JSON_REFERENCE.field) if "$ref" in p else (1, _PARAMETER)
)

_RESPONSE = _Shape(
    {
        "description": (1, _string),
        "schema": (2, _oneof(lambda _: (1, _SCHEMA.field))),  # SchemaItem.schema
    },
    extensions=5,
)


def _response_codes(number: int, responses: Mapping[str, Any]) -> bytes:
    value = _oneof(lambda r: (2, _JSON_REFERENCE.field) if "$ref" in r else (1, _RESPONSE.field))
    codes = {k: v for k, v in responses.items() if not k.startswith("x-")}
    extensions = {k: v for k, v in responses.items() if k.startswith("x-")}
    return _delimited(number, _named(value)(1, codes) + _named(_any)(2, extensions))


_OPERATION = _Shape(
    {
        "tags": (1, _repeated(_string)),
        "summary": (2, _string),
        "description": (3, _string),
        "operationId": (5, _string),
        "produces": (6, _repeated(_string)),
        "consumes": (7, _repeated(_string)),
        "parameters": (8, _repeated(_PARAMETERS_ITEM)),
        "responses": (9, _response_codes),
        "schemes": (10, _repeated(_string)),
        "deprecated": (11, _bool),
    },
    extensions=13,
)
_PATH_ITEM = _Shape(
    {
        **_REF,
        "get": (2, _OPERATION.field),
        "put": (3, _OPERATION.field),
        "post": (4, _OPERATION.field),
        "delete": (5, _OPERATION.field),
        "options": (6, _OPERATION.field),
        "head": (7, _OPERATION.field),
        "patch": (8, _OPERATION.field),
        "parameters": (9, _repeated(_PARAMETERS_ITEM)),
    },
    extensions=10,
)
_INFO = _Shape(
    {"title": (1, _string), "version": (2, _string), "description": (3, _string)},
    extensions=7,
)


def _paths(number: int, paths: Mapping[str, Any]) -> bytes:
    items = {k: v for k, v in paths.items() if not k.startswith("x-")}
    extensions = {k: v for k, v in paths.items() if k.startswith("x-")}
    return _delimited(number, _named(_any)(1, extensions) + _named(_PATH_ITEM.field)(2, items))


_DOCUMENT = _Shape(
    {
        "swagger": (1, _string),
        "info": (2, _INFO.field),
        "host": (3, _string),
        "basePath": (4, _string),
        "schemes": (5, _repeated(_string)),
        "consumes": (6, _repeated(_string)),
        "produces": (7, _repeated(_string)),
        "paths": (8, _paths),
        "definitions": (9, _wrapped(_named(_SCHEMA.field))),
        "parameters": (10, _wrapped(_named(_PARAMETER))),
    },
    extensions=16,
)


def encode_document(document: Mapping[str, Any]) -> bytes:
    """The ``openapi.v2.Document`` message of a Swagger 2.0 document (JSON form)."""
    return _DOCUMENT.encode(document)

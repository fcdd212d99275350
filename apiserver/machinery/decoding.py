"""Decoding request bodies and checking objects against their kind's model.

``decode_body`` turns JSON or YAML bytes into a dict (400 when malformed, or when an
integer does not fit in 64 bits: ``integers``).
``check_object`` parses a dict with the kind's strict model and sorts what it finds into
unknown fields (handled per ``fieldValidation``: rejected, warned about or dropped) and
real type errors (422 with a cause per field).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, TypeVar, get_args, get_origin

import orjson
import yaml
from pydantic import BaseModel, ValidationError

from ..api import field as fielderr
from ..api.field import FieldError
from . import errors, integers, protobuf
from .typehints import unwrap_optional

M = TypeVar("M", bound=BaseModel)

JSON_TYPES = ("application/json",)
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
MAX_DEPTH = 100
"""Deepest nesting of objects and arrays a request body may have.

Far beyond any real object, and far below what the recursive code downstream (and
libyaml's composer, which overflows the C stack) can take.
"""


class FieldValidation(Enum):
    STRICT = "Strict"
    WARN = "Warn"
    IGNORE = "Ignore"

    @classmethod
    def parse(cls, value: str | None) -> FieldValidation:
        if not value:
            return cls.WARN
        for member in cls:
            if member.value == value:
                return member
        raise errors.bad_request(
            f'fieldValidation must be one of "Ignore", "Warn" or "Strict", got "{value}"'
        )


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def decode_body(body: bytes, content_type: str | None) -> dict[str, Any]:
    """Parse a JSON, YAML or (for the kinds kubectl sends so) protobuf request body into a
    JSON object.

    Any other media type is refused with 415 before the body is looked at; no media type
    at all means JSON, the first one served (as Kubernetes' input negotiation does)."""
    kind = media_type(content_type) or JSON_TYPES[0]
    if kind not in JSON_TYPES and kind not in YAML_TYPES and kind != protobuf.MEDIA_TYPE:
        raise errors.unsupported_media_type(kind, (*JSON_TYPES, *YAML_TYPES))
    if not body.strip():
        raise errors.bad_request("the request body is empty; an object was expected")
    if kind == protobuf.MEDIA_TYPE:
        return protobuf.decode_object(body)
    try:
        if kind in YAML_TYPES:
            _check_yaml_depth(body)
            value = _load_yaml(body)
        else:
            value = orjson.loads(body)
            check_depth(body, value)
            integers.check_json(body)
    except (orjson.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
        if isinstance(exc, orjson.JSONDecodeError):
            # orjson refuses an integer too long even for a float: say which field it is.
            integers.check_json(body)
        raise errors.bad_request(
            f"the request body could not be decoded: {_short(str(exc))}"
        ) from exc
    if not isinstance(value, dict):
        raise errors.bad_request(f"the request body must be a JSON object, not {_json_type(value)}")
    return value


def _too_deep() -> errors.StatusError:
    return errors.bad_request(
        f"the request body could not be decoded: it is nested more than {MAX_DEPTH} levels deep"
    )


def check_depth(body: bytes, value: Any) -> None:
    """Reject a decoded JSON body nested deeper than ``MAX_DEPTH`` (400), without recursion."""
    if body.count(b"[") + body.count(b"{") <= MAX_DEPTH:
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep()
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))


def _check_yaml_depth(body: bytes) -> None:
    """Reject YAML nested deeper than ``MAX_DEPTH``, or using aliases, from the parser's
    events before composing: aliases let a few hundred bytes expand into gigabytes
    (a "billion laughs" document), and JSON-shaped objects never need them.

    libyaml looks a whole line ahead for flow collections and, from PyYAML 6.0.4 on,
    stops at a nesting limit of its own before our count sees the depth; the pure-Python
    parser, which has no such limit, then says whether the body was too deep, so the
    client reads our words rather than whichever libyaml is installed."""
    try:
        _walk_yaml_events(body, _JSONCompatibleLoader)
    except yaml.YAMLError:
        _walk_yaml_events(body, _PurePythonLoader)
        raise


def _walk_yaml_events(body: bytes, loader: type[Any]) -> None:
    depth = 0
    for event in yaml.parse(body, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            raise errors.bad_request(
                "the request body could not be decoded: YAML aliases are not supported"
            )
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise _too_deep()
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            depth -= 1


class _JSONCompatibleLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML that yields only JSON types: timestamps stay strings, as in Kubernetes."""


class _PurePythonLoader(yaml.SafeLoader):
    """The pure-Python parser, for telling a too-deep body from a malformed one."""


def _load_yaml(body: bytes) -> Any:
    """The one document of ``body``; 400 naming the field of an integer beyond 64 bits."""
    loader = _JSONCompatibleLoader(body)
    try:
        value = loader.get_single_data()
    finally:
        loader.dispose()
    if loader.overflowed:
        integers.check_value(value)
    return value


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int | integers.Overflow:
    """YAML's integers (decimal, 0x, 0o, 0b, with underscores, sexagesimal) as ints, or an
    ``Overflow`` marker beyond 64 bits (found afterwards by the walk, which names the field)."""
    try:
        value = yaml.SafeLoader.construct_yaml_int(loader, node)
    except ValueError:  # more digits than Python converts
        value = None
    if isinstance(value, int) and integers.in_range(value):
        return value
    loader.overflowed = True
    return integers.Overflow(str(node.value))


_JSONCompatibleLoader.overflowed = False
_JSONCompatibleLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


_JSONCompatibleLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _short(text: str) -> str:
    return text if len(text) < 300 else text[:297] + "..."


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null"


def check_object(
    obj: dict[str, Any], model: type[M]
) -> tuple[M | None, list[str], list[FieldError]]:
    """Parse ``obj`` strictly. Returns the model (None on errors), unknown field paths, errors.

    Unknown fields are removed from ``obj`` as they are found, so that after a call the
    dict holds only known fields (what Warn and Ignore store).
    """
    unknown: list[str] = []
    for _ in range(2):
        try:
            return model.model_validate(obj), unknown, []
        except ValidationError as exc:
            field_errors: list[FieldError] = []
            extra = []
            for err in exc.errors(include_url=False):
                loc = tuple(err["loc"])
                if err["type"] == "extra_forbidden":
                    extra.append(loc)
                else:
                    field_errors.append(_to_field_error(model, loc, err))
            for loc in extra:
                parent = render_loc(model, loc[:-1])
                unknown.append(f"{parent}.{loc[-1]}" if parent else str(loc[-1]))
                _remove(obj, loc)
            if field_errors:
                return None, unknown, field_errors
            if not extra:
                raise
    return None, unknown, [fielderr.invalid("", None, "the object could not be validated")]


def _remove(obj: Any, loc: tuple[Any, ...]) -> None:
    cur = obj
    for part in loc[:-1]:
        try:
            cur = cur[part]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(cur, dict):
        cur.pop(loc[-1], None)


_TYPE_NAMES = {
    "int_type": "integer",
    "int_parsing": "integer",
    "string_type": "string",
    "bool_type": "boolean",
    "float_type": "number",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "list_type": "array",
}


def _to_field_error(model: type[BaseModel], loc: tuple[Any, ...], err: Any) -> FieldError:
    path = render_loc(model, loc)
    kind = err["type"]
    value = err.get("input")
    if kind == "missing":
        return fielderr.required(path)
    if kind in _TYPE_NAMES:
        return fielderr.type_invalid(
            path, _plain(value), f"{path} in body must be of type {_TYPE_NAMES[kind]}"
        )
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        values = [
            v.strip().strip("'") for v in str(expected).replace(" or ", ",").split(",") if v.strip()
        ]
        return fielderr.not_supported(path, _plain(value), values)
    message = str(err.get("msg", "invalid value"))
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    return fielderr.invalid(path, _plain(value), message)


def _plain(value: Any) -> Any:
    if isinstance(value, dict | list):
        return "object" if isinstance(value, dict) else "array"
    return value


def render_loc(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a Kubernetes field path, e.g. ``spec.attributes[a/b].int``.

    Walks the model's types so map keys render in brackets and field names use their
    wire (camelCase) names.
    """
    out = ""
    current: Any = model
    for part in loc:
        current = unwrap_optional(current)
        origin = get_origin(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            name, current = _model_field(current, str(part))
            if name is None:
                continue  # a union branch or validator name, not a field
            out = f"{out}.{name}" if out else name
        elif origin is dict:
            out += f"[{part}]"
            current = get_args(current)[1]
        elif origin is list:
            out += f"[{part}]"
            current = get_args(current)[0]
        elif isinstance(part, int):
            out += f"[{part}]"
        elif out == "" or current is None:
            out = f"{out}.{part}" if out else str(part)
    return out


def _model_field(model: type[BaseModel], part: str) -> tuple[str | None, Any]:
    for name, info in model.model_fields.items():
        wire = info.alias or name
        if part in (wire, name):
            return wire, info.annotation
    return None, None

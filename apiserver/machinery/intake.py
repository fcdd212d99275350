"""The one reading of an object a client writes, before anything is decided on it.

Every written body goes through the same prelude, whatever serves it (a stored kind's
create, update, patch and apply; a review; an action subresource's body):

1. ``check_type_meta``: ``apiVersion`` and ``kind``, when sent, name what the URL serves
   (400 otherwise), and ``metadata`` is an object (422 naming ``metadata``);
2. ``check_names``: the name and namespace in the body, when sent, are the URL's (400);
3. ``parse_written``: unknown fields handled per ``fieldValidation`` (Strict: 400 naming
   every one; Warn: a warning each; Ignore: dropped), then the model's types (422 with a
   cause per field).

What a kind checks beyond its types (metadata rules, its own validation) comes after, and
is the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from ..api import field as fielderr
from . import errors
from .decoding import FieldValidation, check_object

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class BodyType:
    """What a body must be: the ``apiVersion`` and ``kind`` a URL accepts."""

    group_version: str
    kind: str

    @property
    def group(self) -> str:
        return self.group_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.group_version.rpartition("/")[2]


def check_type_meta(obj: dict[str, Any], expected: BodyType, *, required: bool = False) -> None:
    """``apiVersion`` and ``kind``, if sent (``required``: they must be), name ``expected``;
    then both are set to it."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if required and (not api_version or not kind):
        raise errors.bad_request("apiVersion and kind must be set in the applied configuration")
    if api_version is not None and api_version != expected.group_version:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API"
            f" version ({expected.group_version})"
        )
    if kind is not None and kind != expected.kind:
        raise errors.bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({expected.kind})"
        )
    if not isinstance(obj.get("metadata", {}), dict):
        problem = fielderr.type_invalid(
            "metadata", obj.get("metadata"), "metadata in body must be of type object"
        )
        raise errors.invalid(expected.kind, expected.group, "", [problem])
    obj["apiVersion"], obj["kind"] = expected.group_version, expected.kind


def check_names(
    obj: dict[str, Any], namespace: str | None, name: str | None, *, namespaced: bool
) -> None:
    """The body's name and namespace, where both it and the URL give one, are the URL's."""
    meta = obj.get("metadata") or {}
    if name is not None and meta.get("name") and meta["name"] != name:
        raise errors.bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
        )
    if namespaced and meta.get("namespace") and namespace and meta["namespace"] != namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )


def parse_written(
    obj: dict[str, Any], model: type[M], expected: BodyType, validation: FieldValidation
) -> tuple[M, list[str]]:
    """The model of ``obj`` and the warnings for the client; unknown fields are removed from
    ``obj`` (what Warn and Ignore store)."""
    parsed, unknown, errs = check_object(obj, model)
    if unknown and validation is FieldValidation.STRICT:
        fields = ", ".join(f'unknown field "{u}"' for u in unknown)
        raise errors.bad_request(
            f'{expected.kind} in version "{expected.version}" cannot be handled as a'
            f" {expected.kind}: strict decoding error: {fields}"
        )
    if errs or parsed is None:
        name = (obj.get("metadata") or {}).get("name") or ""
        raise errors.invalid(expected.kind, expected.group, name, errs)
    warned = validation is FieldValidation.WARN
    return parsed, [f'unknown field "{u}"' for u in unknown] if warned else []

"""The base model of every API type: strict, camelCase on the wire, unknown fields rejected.

Models here are validators and schema sources, not the stored form: the machinery keeps
objects as JSON-shaped dicts (like the Go server's unstructured objects for custom
resources) and parses them into these models to check types and run kind validation.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema
from pydantic.alias_generators import to_camel


class APIModel(BaseModel):
    """Strict parsing: no coercion between JSON types, unknown fields are errors.

    Unknown fields are found by the strict parse and then, depending on the request's
    ``fieldValidation``, rejected, reported as warnings or dropped by the machinery.
    """

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
    )


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")


def _check_time(value: str) -> str:
    if not _RFC3339.match(value):
        raise ValueError("must be an RFC 3339 date-time, e.g. 2006-01-02T15:04:05Z")
    return value


Time = Annotated[
    str,
    AfterValidator(_check_time),
    Field(json_schema_extra={"format": "date-time"}),
]
"""An RFC 3339 timestamp, kept as the string that was sent."""

_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE])?$")


def _check_quantity(value: Any) -> str | int | float:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError("quantities must be a string or a number")
    if isinstance(value, str) and not _QUANTITY.match(value):
        raise ValueError(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    return value


Quantity = Annotated[
    str | int | float,
    PlainValidator(_check_quantity),
    WithJsonSchema({"x-k8s-quantity": True}),
]
"""A resource quantity such as ``80Gi`` or ``4``; kept as sent."""


def schema_extra(**extra: Any) -> dict[str, Any]:
    """OpenAPI extensions for a field, e.g. ``x-kubernetes-list-type``."""
    return {k.replace("_", "-"): v for k, v in extra.items()}

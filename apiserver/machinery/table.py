"""Server-side printing for ``kubectl get``: column definitions and ``meta.k8s.io/v1`` Tables."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from ..toolkit.timestamps import parse_rfc3339

ColumnType = Literal["string", "integer", "number", "boolean", "date"]


@dataclass(frozen=True)
class Column:
    """One printed column: a header, a type, and how to read the cell from an object."""

    name: str
    type: ColumnType
    value: Callable[[dict[str, Any]], Any]
    description: str = ""
    priority: int = 0
    format: str = ""

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


def path(*keys: str | int) -> Callable[[dict[str, Any]], Any]:
    """A getter for a nested value, None where any step is missing."""

    def get(obj: dict[str, Any]) -> Any:
        cur: Any = obj
        for key in keys:
            if isinstance(key, int):
                if not isinstance(cur, list) or len(cur) <= key:
                    return None
                cur = cur[key]
            else:
                if not isinstance(cur, dict):
                    return None
                cur = cur.get(key)
        return cur

    return get


def string_at(*keys: str) -> Callable[[dict[str, Any]], str | None]:
    """A getter for a nested string (a field selector's ``FieldGetter``), None where any
    step is missing or the value is not a string."""
    get = path(*keys)

    def getter(obj: dict[str, Any]) -> str | None:
        value = get(obj)
        return value if isinstance(value, str) else None

    return getter


NAME_COLUMN = Column(
    "Name",
    "string",
    path("metadata", "name"),
    "Name must be unique within a namespace.",
    format="name",
)
AGE_COLUMN = Column(
    "Age",
    "date",
    lambda obj: human_age(obj.get("metadata", {}).get("creationTimestamp")),
    "Time since the object was created.",
)


def human_age(timestamp: str | None, now: datetime | None = None) -> str:
    """Age the way kubectl prints it: ``45s``, ``5m3s``, ``3h``, ``12d``, ``2y40d``."""
    if not timestamp:
        return "<unknown>"
    then = parse_rfc3339(timestamp)
    if then is None:
        return "<invalid>"
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    return human_duration(seconds)


def human_duration(seconds: int) -> str:
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{hours // 24 // 365}y"


def partial_object_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """The ``meta.k8s.io/v1`` PartialObjectMetadata view of an object."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def table(
    columns: Sequence[Column],
    objects: Iterable[dict[str, Any]],
    *,
    include_object: str = "Metadata",
    list_meta: dict[str, Any] | None = None,
    with_headers: bool = True,
) -> dict[str, Any]:
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [_cell(c, obj) for c in columns]}
        if include_object == "Object":
            row["object"] = obj
        elif include_object == "Metadata":
            row["object"] = partial_object_metadata(obj)
        rows.append(row)
    result: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta or {},
        "columnDefinitions": [c.definition() for c in columns] if with_headers else [],
        "rows": rows,
    }
    return result


def _cell(column: Column, obj: dict[str, Any]) -> Any:
    try:
        value = column.value(obj)
    except (KeyError, IndexError, TypeError, ValueError):
        value = None
    if value is None:
        return None
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return value

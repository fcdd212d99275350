"""Core ``v1`` Event (standalone mode): namespaced, short name ``ev``, printed like kubectl does."""

from __future__ import annotations

from typing import Any, ClassVar

from ..api.core import Event, validate_event
from ..api.field import FieldError
from ..machinery import NAME_COLUMN, Column, FieldGetter, Strategy, human_age, path, string_at

CORE_GROUP = ""


def _last_seen(obj: dict[str, Any]) -> str:
    series = obj.get("series") or {}
    when = series.get("lastObservedTime") or obj.get("lastTimestamp") or obj.get("eventTime")
    return human_age(when or obj.get("metadata", {}).get("creationTimestamp"))


def _object(obj: dict[str, Any]) -> str:
    ref = obj.get("involvedObject") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


class EventStrategy(Strategy[Event]):
    model = Event
    version = "v1"
    kind = "Event"
    plural = "events"
    singular = "event"
    namespaced = True
    short_names = ("ev",)
    columns: ClassVar[tuple[Column, ...]] = (
        Column("Last Seen", "string", _last_seen, "Time since the event was last seen."),
        Column("Type", "string", path("type"), "Normal or Warning."),
        Column("Reason", "string", path("reason"), "Why the event happened."),
        Column("Object", "string", _object, "The object the event is about."),
        Column(
            "Subobject",
            "string",
            path("involvedObject", "fieldPath"),
            "Part of the object.",
            priority=1,
        ),
        Column("Source", "string", path("source", "component"), "Who reported it.", priority=1),
        Column("Message", "string", path("message"), "What happened."),
        Column(
            "First Seen", "string", lambda o: human_age(o.get("firstTimestamp")), "", priority=1
        ),
        Column("Count", "integer", path("count"), "How often it happened.", priority=1),
    )
    extra_field_getters: ClassVar[dict[str, FieldGetter]] = {
        **{
            f"involvedObject.{name}": string_at("involvedObject", name)
            for name in (
                "kind",
                "namespace",
                "name",
                "uid",
                "apiVersion",
                "resourceVersion",
                "fieldPath",
            )
        },
        "reason": string_at("reason"),
        "reportingComponent": string_at("reportingComponent"),
        "source": string_at("source", "component"),
        "type": string_at("type"),
    }

    @classmethod
    def core(cls) -> EventStrategy:
        return cls(CORE_GROUP)

    def validate(self, obj: Event) -> list[FieldError]:
        return validate_event(obj)

    def table_columns(self) -> tuple[Column, ...]:
        # kubectl prints events without a NAME column (it shows with -o wide).
        name = Column(
            NAME_COLUMN.name, "string", NAME_COLUMN.value, NAME_COLUMN.description, 1, "name"
        )
        return (*self.columns, name)

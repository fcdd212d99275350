"""The local cache of a source: objects by key, and the diff of a relist."""

from __future__ import annotations

from collections.abc import Iterable

from ..storage import EventType
from ..toolkit import JSON
from .interface import SourceEvent, object_key


class ObjectCache:
    """Objects by key; objects are never mutated."""

    def __init__(self) -> None:
        self.objects: dict[str, JSON] = {}

    def __len__(self) -> int:
        return len(self.objects)

    def get(self, key: str) -> JSON | None:
        return self.objects.get(key)

    def upsert(self, obj: JSON) -> SourceEvent:
        key = object_key(obj)
        old = self.objects.get(key)
        self.objects[key] = obj
        kind = EventType.ADDED if old is None else EventType.MODIFIED
        return SourceEvent(kind, key, obj, old)

    def delete(self, obj: JSON) -> SourceEvent | None:
        """Remove the object with ``obj``'s key; None if it was not cached."""
        key = object_key(obj)
        old = self.objects.pop(key, None)
        if old is None:
            return None
        return SourceEvent(EventType.DELETED, key, obj, old)

    def replace(self, items: Iterable[JSON]) -> list[SourceEvent]:
        """Make the cache hold exactly ``items`` (a fresh list); the events that got it there.

        Objects whose resourceVersion did not change produce no event; objects that are gone
        are DELETED with their last cached state.
        """
        events: list[SourceEvent] = []
        seen: set[str] = set()
        for obj in items:
            key = object_key(obj)
            seen.add(key)
            old = self.objects.get(key)
            if old is not None and _same_version(old, obj):
                continue
            events.append(self.upsert(obj))
        for key in [k for k in self.objects if k not in seen]:
            gone = self.delete(self.objects[key])
            if gone is not None:
                events.append(gone)
        return events


def _same_version(a: JSON, b: JSON) -> bool:
    rv_a = (a.get("metadata") or {}).get("resourceVersion")
    rv_b = (b.get("metadata") or {}).get("resourceVersion")
    return rv_a is not None and rv_a == rv_b

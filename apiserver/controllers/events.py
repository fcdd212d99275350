"""Events in the server's own Event registry (standalone mode); the recording behaviour
itself (one deduplicated Event per object and problem) is the toolkit's."""

from __future__ import annotations

import orjson

from ..machinery import Registry, WriteOptions, errors
from ..toolkit import JSON, MERGE_PATCH
from ..toolkit.events import DedupEventRecorder, EventRecorder, EventWriter, event_name

__all__ = [
    "JSON",
    "DedupEventRecorder",
    "EventRecorder",
    "EventWriter",
    "RegistryEventRecorder",
    "RegistryEventWriter",
    "event_name",
]


class RegistryEventWriter:
    """Events in our own Event registry (standalone mode)."""

    def __init__(self, registry: Registry, component: str) -> None:
        self.registry = registry
        self.options = WriteOptions(field_manager=component)

    async def get(self, namespace: str, name: str) -> JSON | None:
        try:
            return (await self.registry.get(namespace, name)).obj
        except errors.StatusError as err:
            if err.code != 404:
                raise
            return None

    async def create(self, namespace: str, event: JSON) -> bool:
        try:
            await self.registry.create(namespace, event, self.options)
        except errors.StatusError as err:
            if err.reason != "AlreadyExists":
                raise
            return False
        return True

    async def merge(self, namespace: str, name: str, patch: JSON) -> None:
        await self.registry.patch(namespace, name, orjson.dumps(patch), MERGE_PATCH, self.options)


class RegistryEventRecorder(DedupEventRecorder):
    def __init__(self, registry: Registry, component: str) -> None:
        super().__init__(RegistryEventWriter(registry, component), component)
        self.registry = registry

"""Warning Events about objects, deduplicated: one Event per object and problem.

The Event's name is derived from the object's name and a key naming the problem, so a
repeat of the problem — in this process or after a restart — bumps ``count`` and
``lastTimestamp`` of the same Event instead of creating another. Written through the
Event registry in-process (standalone mode), in the object's namespace or in ``default``
for a cluster-scoped object, as Kubernetes does.
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

import orjson

from ..machinery import errors
from ..machinery.patching import MERGE_PATCH
from ..machinery.registry import Registry, WriteOptions, now_rfc3339

JSON = dict[str, Any]
MAX_NAME = 253


class EventRecorder(Protocol):
    async def warn(self, about: JSON, key: str, reason: str, message: str) -> None:
        """Record (or repeat) the Warning ``key`` about the object ``about``."""
        ...


def event_name(object_name: str, key: str) -> str:
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{object_name[: MAX_NAME - len(digest) - 1]}.{digest}"


class RegistryEventRecorder:
    def __init__(self, registry: Registry, component: str) -> None:
        self.registry = registry
        self.component = component
        self.options = WriteOptions(field_manager=component)

    async def warn(self, about: JSON, key: str, reason: str, message: str) -> None:
        meta = about.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        name = event_name(str(meta.get("name", "")), f"{meta.get('uid')}/{key}")
        now = now_rfc3339()
        try:
            current = await self.registry.get(namespace, name)
        except errors.StatusError as err:
            if err.code != 404:
                raise
            current = None
        if current is not None:
            bump = {"count": int(current.obj.get("count") or 1) + 1, "lastTimestamp": now}
            await self.registry.patch(
                namespace,
                name,
                orjson.dumps({**bump, "message": message}),
                MERGE_PATCH,
                self.options,
            )
            return
        involved = {
            "apiVersion": about.get("apiVersion"),
            "kind": about.get("kind"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        }
        if meta.get("namespace"):
            involved["namespace"] = meta["namespace"]
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": "Warning",
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            await self.registry.create(namespace, event, self.options)
        except errors.StatusError as err:
            if err.reason != "AlreadyExists":
                raise
            await self.warn(about, key, reason, message)  # lost a race: bump instead

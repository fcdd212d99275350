"""Events about objects, deduplicated: one Event per object and problem (or happening).

The Event's name is derived from the object's name and a key naming the problem, so a
repeat of the problem — in this process or after a restart — bumps ``count`` and
``lastTimestamp`` of the same Event instead of creating another. Written in the object's
namespace or in ``default`` for a cluster-scoped object, as Kubernetes does, through an
``EventWriter``: the server's Event registry in-process, a kube-apiserver's events API, or
any API server over HTTPS (the scheduler shim and the stand-in scheduler).
"""

from __future__ import annotations

import hashlib
from typing import Protocol

from .jsonobject import JSON
from .names import MAX_NAME
from .timestamps import now_rfc3339


class EventRecorder(Protocol):
    async def warn(self, about: JSON, key: str, reason: str, message: str) -> None:
        """Record (or repeat) the Warning ``key`` about the object ``about``."""
        ...


def event_name(object_name: str, key: str) -> str:
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{object_name[: MAX_NAME - len(digest) - 1]}.{digest}"


class EventWriter(Protocol):
    """Where Events are kept: our Event registry, or a kube-apiserver's events API."""

    async def get(self, namespace: str, name: str) -> JSON | None:
        """The Event, or None when there is none."""
        ...

    async def create(self, namespace: str, event: JSON) -> bool:
        """Create it; False when an Event of that name already exists."""
        ...

    async def merge(self, namespace: str, name: str, patch: JSON) -> None:
        """Apply a JSON merge patch to the Event."""
        ...


class DedupEventRecorder:
    """The one recording behaviour: the first occurrence creates the Event, a repeat bumps
    its ``count`` and ``lastTimestamp``; a create that loses a race becomes a bump."""

    def __init__(self, writer: EventWriter, component: str) -> None:
        self.writer = writer
        self.component = component

    async def warn(self, about: JSON, key: str, reason: str, message: str) -> None:
        await self.record(about, key, reason, message, "Warning")

    async def normal(self, about: JSON, key: str, reason: str, message: str) -> None:
        """Record (or repeat) the Normal Event ``key`` about ``about``: something worth
        seeing in ``kubectl describe`` that is not a problem (a wait that began)."""
        await self.record(about, key, reason, message, "Normal")

    async def record(
        self, about: JSON, key: str, reason: str, message: str, event_type: str
    ) -> None:
        meta = about.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        name = event_name(str(meta.get("name", "")), f"{meta.get('uid')}/{key}")
        for _attempt in range(2):
            now = now_rfc3339()
            current = await self.writer.get(namespace, name)
            if current is not None:
                bump = {"count": int(current.get("count") or 1) + 1, "lastTimestamp": now}
                await self.writer.merge(namespace, name, {**bump, "message": message})
                return
            event = self._event(about, name, namespace, reason, message, now, event_type)
            if await self.writer.create(namespace, event):
                return

    def _event(
        self,
        about: JSON,
        name: str,
        namespace: str,
        reason: str,
        message: str,
        now: str,
        event_type: str,
    ) -> JSON:
        meta = about.get("metadata") or {}
        involved = {
            "apiVersion": about.get("apiVersion"),
            "kind": about.get("kind"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        }
        if meta.get("namespace"):
            involved["namespace"] = meta["namespace"]
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": event_type,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }

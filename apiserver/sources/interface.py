"""The one interface above the "source" layer: list, then watch, kept in a local cache.

A source mirrors one kind of object (ResourceSlices, DeviceClasses, ResourceSlicePatches…)
from wherever it lives — our own store, or a kube-apiserver — as read-only JSON dicts
(unknown fields survive). Consumers register handlers, wait for ``has_synced`` and then
read the cache (``get``, ``items``) or react to events.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..storage import EventType
from ..toolkit import JSON


@dataclass(frozen=True)
class SourceEvent:
    """A change to the cache. ``obj`` is the new state, or for DELETED the last one known;
    ``old`` the previous state (None for ADDED)."""

    type: EventType
    key: str
    obj: JSON
    old: JSON | None = None


Handler = Callable[[SourceEvent], None]
"""Called synchronously, in order, after the cache has applied the event."""


class Source(Protocol):
    """A list+watch mirror of one kind."""

    name: str
    """What the source mirrors, e.g. ``resourceslices``; used in readiness checks and logs."""

    def add_handler(self, handler: Handler) -> None: ...

    async def start(self) -> None:
        """Begin listing and watching in the background; returns at once."""
        ...

    async def close(self) -> None: ...

    @property
    def has_synced(self) -> bool:
        """True once the first list has been applied (and handlers told about it)."""
        ...

    async def wait_synced(self) -> None: ...

    @property
    def revision(self) -> int:
        """The newest revision the cache is known to reflect (events and bookmarks)."""
        ...

    async def reached(self, revision: int) -> None:
        """Until ``revision`` is reached (its events dispatched to the handlers)."""
        ...

    def request_progress(self) -> None:
        """Ask for the revision to be brought up to date now rather than at the next periodic
        progress report (a reader about to wait for a revision calls it); it may do nothing."""
        ...

    def get(self, key: str) -> JSON | None:
        """The cached object under ``key`` (``name``, or ``namespace/name``)."""
        ...

    def lookup(self) -> Callable[[str], JSON | None]:
        """``get`` as one callable, for a loop over thousands of keys: the calls ``get``
        makes on its way to the cache cost more than the lookup."""
        ...

    def items(self) -> list[JSON]: ...


def object_key(obj: JSON) -> str:
    """``name`` for cluster-scoped objects, ``namespace/name`` for namespaced ones."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = str(meta.get("name", ""))
    return f"{namespace}/{name}" if namespace else name


def object_revision(obj: JSON) -> int:
    """The object's resourceVersion as a number (0 when it is not one)."""
    value = (obj.get("metadata") or {}).get("resourceVersion")
    return int(value) if isinstance(value, str) and value.isdigit() else 0

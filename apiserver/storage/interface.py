"""The Store protocol: a revisioned key-value store of JSON objects, like etcd.

Every write gets a new, global, monotonically increasing revision, which becomes the
object's ``metadata.resourceVersion``. Lists can be read at the latest revision or at an
older one still in history; watches start after any revision still in history, and a
revision older than that raises ``RevisionCompactedError`` (410 Gone to clients).

Objects cross this boundary as JSON bytes (what is stored and what is served) with the
parsed form computed lazily, so hot read paths never re-encode an object.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any, Protocol

import orjson


@dataclass(frozen=True, eq=False)
class StoredObject:
    """One stored version of an object: its key, revision and JSON bytes."""

    key: str
    revision: int
    raw: bytes
    _parsed: dict[str, Any] | None = field(default=None, repr=False)

    @cached_property
    def obj(self) -> dict[str, Any]:
        """The parsed object. Shared between readers: never mutate it, use ``copy()``."""
        return self._parsed if self._parsed is not None else orjson.loads(self.raw)

    def copy(self) -> dict[str, Any]:
        """A fresh, mutable parse of the object."""
        parsed: dict[str, Any] = orjson.loads(self.raw)
        return parsed


class EventType(Enum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True)
class WatchEvent:
    """A change. For DELETED, ``object`` is the last state with the deletion's revision."""

    type: EventType
    object: StoredObject
    prev: StoredObject | None = None

    @property
    def revision(self) -> int:
        return self.object.revision


@dataclass(frozen=True)
class ListPage:
    """Objects in key order read at one revision; ``more`` if the range holds further keys."""

    items: list[StoredObject]
    revision: int
    more: bool


class Watch(ABC):
    """A stream of events after a revision, in revision order.

    Every watch implementation inherits this class. The progress hooks at the end are for
    a backend that can be asked how far a stream has got (etcd's progress requests); their
    defaults say that it cannot.
    """

    @abstractmethod
    def __aiter__(self) -> AsyncIterator[WatchEvent]: ...

    @abstractmethod
    def progress(self) -> int | None:
        """A revision up to which every event of this watch has been delivered, if known.

        Used to send bookmarks: a client may resume from it without missing anything.
        """

    @abstractmethod
    async def close(self) -> None: ...

    on_progress: Callable[[], None] | None = None
    """Set by the consumer: called whenever the backend reports progress on this stream."""

    on_cut: Callable[[], None] | None = None
    """Set by the consumer: called (at once, from the store) if the store cuts this stream
    off because its consumer fell too far behind; the stream then ends, and its client
    should re-watch. A consumer blocked on its own client learns of it only this way."""

    reported_revision: int = 0
    """The newest revision the backend reported on this stream; complete only once
    ``progress()`` reaches it (0: the backend never reports)."""

    def request_progress(self) -> None:  # noqa: B027 - a default, not abstract
        """Ask the backend to report progress on this stream (nothing to ask by default).

        Cheap, but on a backend that cannot order its reports after pending events the
        report may prove nothing (``reported_revision`` moves, ``progress()`` does not)."""

    def request_ordered_progress(self) -> None:
        """Ask for progress that ``progress()`` can count on, even where the backend cannot
        order its reports (etcd before 3.5.13 needs a write to a progress mark for it): for
        a reader that must see every write made before it asked."""
        self.request_progress()


class ReadableStore(Protocol):
    """What serving reads needs: get, list and watch at revisions. A computed view (the
    Device kind) is one; it has no writes to refuse."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    @property
    def revision(self) -> int:
        """The newest revision this process knows to be committed."""
        ...

    @property
    def compacted_revision(self) -> int:
        """History at or below this revision is gone."""
        ...

    async def current_revision(self) -> int:
        """The backend's newest revision, read after this call began.

        Every write acknowledged before the call is at or below it, whichever process
        made it: the revision a consistent read must reach.
        """
        ...

    def readiness(self) -> dict[str, bool]:
        """Named checks for ``/readyz``: each true once that part can serve."""
        ...

    async def get(self, key: str) -> StoredObject | None: ...

    async def list(
        self, prefix: str, *, revision: int | None = None, start: str = "", limit: int = 0
    ) -> ListPage:
        """Keys under ``prefix`` from ``start`` (inclusive), at most ``limit`` (0: all)."""
        ...

    def watch(self, prefix: str, revision: int) -> Watch:
        """Events under ``prefix`` after ``revision``. Raises RevisionCompactedError on iteration."""
        ...


class Store(ReadableStore, Protocol):
    """A store of objects: the reads, and writes with preconditions."""

    async def create(self, key: str, obj: dict[str, Any]) -> StoredObject:
        """Store a new object; sets its ``metadata.resourceVersion``. Raises KeyExistsError."""
        ...

    async def update(
        self, key: str, obj: dict[str, Any], *, expected_revision: int | None
    ) -> StoredObject:
        """Replace an object, if it is still at ``expected_revision`` (None: any)."""
        ...

    async def delete(self, key: str, *, expected_revision: int | None) -> StoredObject:
        """Remove an object; returns its last state stamped with the deletion revision."""
        ...

    async def create_many(self, items: Sequence[tuple[str, dict[str, Any]]]) -> list[StoredObject]:
        """Store several new objects atomically: all of them, or none if any key exists
        (KeyExistsError names the first such key, in the order given). Returns them in that
        order. Revisions are those of one transaction: etcd gives every key the same one,
        SQLite consecutive ones; either way no other write falls between them."""
        ...

    async def delete_many(self, items: Sequence[tuple[str, int | None]]) -> list[StoredObject]:
        """Remove several objects atomically, each if still at its expected revision (None:
        any): all of them, or none, raising the error of the first key that fails
        (KeyNotFoundError, PreconditionFailedError). Returns their last states, stamped
        with the deletion revision, in the order given."""
        ...

    async def compact(self, revision: int) -> None:
        """Drop history before ``revision``; reads and watches from older ones are gone."""
        ...


def check_distinct(keys: Sequence[str]) -> None:
    """A multi-key write names each key once (ValueError otherwise)."""
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise ValueError(f"{key} is listed twice in one write")
        seen.add(key)


def prefix_end(prefix: str) -> str:
    """The smallest string greater than every string starting with ``prefix``."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def set_resource_version(obj: dict[str, Any], revision: int) -> None:
    """Stamp the storage revision into the object, as the Kubernetes versioner does."""
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)

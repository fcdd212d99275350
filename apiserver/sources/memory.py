"""A source whose objects the caller sets: for tests of the layers above, and benchmarks.

``put`` and ``remove`` behave like writes to a store followed by their watch events: each
gets the next revision of a clock that several sources may share (so revisions are
ordered across kinds, as they are in one store).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable

from ..storage import EventType
from ..toolkit import JSON
from .informer import Informer
from .interface import object_key


class RevisionClock:
    """Hands out increasing revisions."""

    def __init__(self, start: int = 1) -> None:
        self._counter = itertools.count(start)
        self.current = start - 1

    def next(self) -> int:
        self.current = next(self._counter)
        return self.current


class MemorySource(Informer):
    def __init__(
        self,
        name: str,
        objects: Iterable[JSON] = (),
        *,
        clock: RevisionClock | None = None,
    ) -> None:
        super().__init__(name)
        self.clock = clock or RevisionClock()
        self._initial = [self._stamp(obj) for obj in objects]

    def _stamp(self, obj: JSON) -> JSON:
        stamped = copy.deepcopy(obj)
        stamped.setdefault("metadata", {})["resourceVersion"] = str(self.clock.next())
        return stamped

    async def start(self) -> None:
        # Nothing to list or watch: changes come through put and remove.
        if not self.has_synced:
            self._replace(self._initial, self.clock.current)
            self._initial = []

    def put(self, obj: JSON) -> JSON:
        """Add or replace an object (a copy, stamped with the next revision)."""
        stamped = self._stamp(obj)
        if not self.has_synced:
            self._initial = [o for o in self._initial if object_key(o) != object_key(stamped)]
            self._initial.append(stamped)
        else:
            self._apply(EventType.MODIFIED, stamped, self.clock.current)
        return stamped

    def remove(self, key: str) -> None:
        """Delete the object under ``key``, if there is one."""
        if not self.has_synced:
            self._initial = [o for o in self._initial if object_key(o) != key]
            return
        current = self.cache.get(key)
        if current is not None:
            gone = copy.deepcopy(current)
            gone["metadata"]["resourceVersion"] = str(self.clock.next())
            self._apply(EventType.DELETED, gone, self.clock.current)

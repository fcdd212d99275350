"""The version of everything an AllocationReview's answer is computed from.

A review reports it in ``status.stateVersion``: two reviews of the same claims and nodes on
the same server that report the same version were answered from the same state, so a client
that asked once (the scheduler shim's filter) may reuse that answer (its prioritize): a review
sent with the version held (``spec.knownStateVersion``) is answered ``unchanged`` without a
search while it is still the version.

It counts the changes the review's inputs went through: every object a source delivered
(slices, classes, claims, nodes, patches, reservations), every pool the pool index touched
(devices, allocations, reservations) and, since a reservation also lapses by time alone,
the set of devices reserved now. Counting changes, not revisions, keeps it still while only
unrelated objects are written (events, leases), which move the store's revision. The
server's own random prefix makes a version of one server process never equal one of
another (each counts from zero).
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Iterable

from ..pools import PoolIndex
from ..sources import Source, SourceEvent


class StateVersion:
    """Counts the changes of the sources and pools it is attached to."""

    def __init__(self, sources: Iterable[Source], pools: PoolIndex) -> None:
        self.instance = secrets.token_hex(4)
        self.changes = 0
        self.pool_changes = 0
        """Changes of the pool index alone: its snapshot is the same while this is."""
        for source in sources:
            source.add_handler(self._on_event)
        pools.on_change(self._on_pool)

    def _on_event(self, _: SourceEvent) -> None:
        self.changes += 1

    def _on_pool(self, _: object) -> None:
        self.changes += 1
        self.pool_changes += 1

    def current(self, reserved: Collection[tuple[str, str, str]]) -> str:
        """The version now, with ``reserved`` the devices reservations hold now."""
        held = hash(frozenset(reserved)) & 0xFFFFFFFF
        return f"{self.instance}.{self.changes}.{held:08x}"

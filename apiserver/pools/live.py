"""The live pool view: one ResourcePool object per pool, kept current as claims and slices
change, served as a readable store (the computed ResourcePool kind).

It listens to the ``PoolIndex`` (``on_change``): every change there names the pools it
touched, and those keys gather in a set until the view's task gets to them, so a burst of
changes to one pool (a claim deallocated and allocated again, a slice and its devices)
costs one recomputation. The task first lets the device view catch up with its sources
(bounded by ``settle_timeout``), so that a slice is never counted without its devices;
then it asks the index for the summary of each touched pool — the very ``PoolSummary`` a
ResourcePoolStatusRequest's pool entry is made of — and commits the pools whose object
changed to the store at one revision: ADDED for a pool that appeared, MODIFIED when its
counts, placement or problems changed, DELETED when its last slice went. It yields to the
event loop whenever it has run for ``budget`` seconds, so a relist that touches every pool
does not stall requests.

Revisions are the sources' (the newest revision the slice and claim sources have seen, or
one past the view's last commit), like the device view's, so a resourceVersion survives a
restart of the server as long as the sources' store does.

Names (see ``names``): the readable ``<driver>.<pool>`` unless that is not a valid name or
another pool shares it; the view tracks which pools claim each readable name, and when a
second pool claims one, both move to their hashed names (DELETED, then ADDED).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable

from ..machinery import ResourceType
from ..storage.computed import ComputedStore
from ..storage.window import WATCH_WINDOW
from ..tasks import BackgroundTask
from ..toolkit.timestamps import now_rfc3339
from .gather import PoolKey
from .index import PoolIndex
from .names import hashed_name, pool_object_uid, readable_name
from .objects import PoolRecord, pool_object, pool_placement

log = logging.getLogger("apiserver.pools.live")
COMMIT_CHUNK = 256
"""Objects committed at one revision when many pools changed at once (a relist)."""


class LivePools:
    """The view and its store (``store``, a ``ComputedStore`` of ``PoolRecord``)."""

    def __init__(
        self,
        index: PoolIndex,
        resource: ResourceType,
        *,
        window: int = WATCH_WINDOW,
        window_bytes: int = 0,
        budget: float = 0.005,
        settle_timeout: float = 1.0,
    ) -> None:
        self.index = index
        self.resource = resource
        api_version = resource.group_version
        self.store: ComputedStore[PoolRecord] = ComputedStore(
            lambda record, revision: pool_object(record, api_version, revision),
            what="the pool view",
            window=window,
            window_bytes=window_bytes,
            max_pending=window,
        )
        self.budget = budget
        self.settle_timeout = settle_timeout
        self._dirty: set[PoolKey] = set()
        self._busy = False
        self._wakeup = asyncio.Event()
        self._records: dict[PoolKey, PoolRecord] = {}
        self._claimants: dict[str, set[PoolKey]] = {}
        """Readable name -> the pools that would have it."""
        self._task = BackgroundTask("pool view", self._run, log)
        self.rounds = 0
        """Rounds of recomputation committed (or found nothing to commit) since start."""
        self.recomputed = 0
        """Pools recomputed since the first full build."""
        self.update_cpu = 0.0
        """CPU seconds spent recomputing and committing since the first full build."""
        index.on_change(self._on_change)

    # -- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.close()
        await self.store.close()

    @property
    def has_synced(self) -> bool:
        return self.store.synced

    @property
    def idle(self) -> bool:
        """Synced, and every change the index has told of is in the store."""
        return self.store.synced and not self._dirty and not self._busy

    def _on_change(self, key: PoolKey) -> None:
        self._dirty.add(key)
        self._wakeup.set()

    # -- the task ------------------------------------------------------------------

    async def _run(self) -> None:
        await self.index.wait_synced()
        await self._settle()
        self._dirty.clear()
        self._wakeup.clear()
        records = await self._records_of(self.index.pool_keys())
        self._records = {}
        self._claimants = {}
        for key, record in records.items():
            if record is not None:
                self._claim(key)
        for key, record in records.items():
            if record is not None:
                self._records[key] = self._named(key, record)
        revision = self._next_revision()
        self.store.replace_all(((self._key(r), r) for r in self._records.values()), revision)
        self._wakeup.set()
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            self._busy = True
            try:
                await self._settle()
                dirty, self._dirty = self._dirty, set()
                if dirty:
                    began = time.thread_time()
                    await self._update(dirty)
                    self.update_cpu += time.thread_time() - began
            finally:
                self._busy = False
            self.rounds += 1

    async def _settle(self) -> None:
        """Until the device view has committed what its sources have seen, or the timeout."""
        if self.index.settled:  # the usual case: no timer and task for a wait of nothing
            return
        try:
            await asyncio.wait_for(self.index.settle(), self.settle_timeout)
        except TimeoutError:
            log.debug("the device view is still busy: counting what the index has")

    async def _records_of(self, keys: Iterable[PoolKey]) -> dict[PoolKey, PoolRecord | None]:
        """Each pool's record (unnamed), None for a pool that is gone; yields to the event
        loop every ``budget`` seconds."""
        out: dict[PoolKey, PoolRecord | None] = {}
        began = time.perf_counter()
        for key in keys:
            if time.perf_counter() - began > self.budget:
                await asyncio.sleep(0)
                began = time.perf_counter()
            out[key] = self._record(key)
        return out

    def _record(self, key: PoolKey) -> PoolRecord | None:
        driver, pool = key
        gathered = self.index.gathered(driver, pool)
        summary = self.index.summary(driver, pool)
        if gathered is None or summary is None:
            return None
        old = self._records.get(key)
        return PoolRecord(
            name="",
            uid=old.uid if old is not None else pool_object_uid(driver, pool),
            summary=summary,
            placement=pool_placement(gathered),
            created=old.created if old is not None else now_rfc3339(),
        )

    async def _update(self, dirty: set[PoolKey]) -> None:
        fresh = await self._records_of(sorted(dirty))
        # A pool may have changed again while the others were computed: its key is in
        # the next round's set, and this round commits what it saw.
        renamed: set[PoolKey] = set()
        for key, record in fresh.items():
            had = key in self._records
            if record is None and had:
                renamed |= self._unclaim(key)
            elif record is not None and not had:
                renamed |= self._claim(key)
        for key in renamed - fresh.keys():
            fresh[key] = self._records.get(key)
        changes: list[tuple[str, PoolRecord | None]] = []
        for key, record in fresh.items():
            old = self._records.get(key)
            new = self._named(key, record) if record is not None else None
            if new == old:
                continue
            if old is not None and (new is None or new.name != old.name):
                changes.append((self._key(old), None))
            if new is not None:
                changes.append((self._key(new), new))
                self._records[key] = new
            else:
                self._records.pop(key, None)
        self.recomputed += len(dirty)
        await self._commit(changes)

    async def _commit(self, changes: list[tuple[str, PoolRecord | None]]) -> None:
        """Commit in revisions of at most ``COMMIT_CHUNK`` objects (each built and encoded
        once for its event), yielding to the event loop between them when over budget; the
        records already say the outcome, so later reads agree with the last revision."""
        began = time.perf_counter()
        for at in range(0, len(changes), COMMIT_CHUNK):
            if at and time.perf_counter() - began > self.budget:
                await asyncio.sleep(0)
                began = time.perf_counter()
            self.store.commit(self._next_revision(), changes[at : at + COMMIT_CHUNK])

    # -- names ---------------------------------------------------------------------

    def _claim(self, key: PoolKey) -> set[PoolKey]:
        """Record that ``key`` wants its readable name; the pools whose name this changes."""
        name = readable_name(*key)
        if name is None:
            return set()
        claimants = self._claimants.setdefault(name, set())
        claimants.add(key)
        return set(claimants) - {key} if len(claimants) == 2 else set()

    def _unclaim(self, key: PoolKey) -> set[PoolKey]:
        name = readable_name(*key)
        claimants = self._claimants.get(name) if name is not None else None
        if name is None or claimants is None:
            return set()
        claimants.discard(key)
        if not claimants:
            del self._claimants[name]
        return set(claimants) if len(claimants) == 1 else set()

    def _named(self, key: PoolKey, record: PoolRecord) -> PoolRecord:
        name = readable_name(*key)
        if name is None or len(self._claimants.get(name, ())) > 1:
            name = hashed_name(*key)
        if record.name == name:
            return record
        return PoolRecord(name, record.uid, record.summary, record.placement, record.created)

    # -- helpers -------------------------------------------------------------------

    def _key(self, record: PoolRecord) -> str:
        return self.resource.key(None, record.name)

    def _next_revision(self) -> int:
        sources = max(self.index.slices.revision, self.index.claims.revision)
        return max(self.store.revision + 1, sources)

"""The embedded store: SQLite in WAL mode, with an etcd-like revision log.

Layout: ``log`` holds one row per write (its revision is the row id, the global
resourceVersion), ``current`` maps each live key to its newest revision. Reading at an
older revision takes, per key, the newest log row at or below it, so paginated lists
stay consistent and watches resume from any revision still in the log. Compaction drops
rows superseded at or below the compacted revision; older requests get 410 Gone.

Durability: every write is acknowledged only after its transaction commits with
``synchronous=FULL``. Writes run on one writer thread, which commits whatever queued up
meanwhile in one transaction (group commit, each write in its own savepoint), so
concurrent writers share fsyncs without weakening the guarantee. Scans run on a small
pool of reader threads with their own connections; a point read (one primary-key lookup,
cheaper than the hop to a thread) runs on the event loop and never waits for a lock: if
the database is busy it goes to a reader thread instead.
"""

from __future__ import annotations

import asyncio
import builtins
import queue
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson

from .errors import (
    KeyExistsError,
    KeyNotFoundError,
    PreconditionFailedError,
    RevisionCompactedError,
    StorageError,
    StorageUnavailableError,
)
from .fanout import Fanout, FollowingWatch
from .interface import (
    EventType,
    ListPage,
    StoredObject,
    WatchEvent,
    check_distinct,
    prefix_end,
    set_resource_version,
)
from .window import WATCH_WINDOW

_ADDED, _MODIFIED, _DELETED = 0, 1, 2
_EVENT_TYPES = {_ADDED: EventType.ADDED, _MODIFIED: EventType.MODIFIED, _DELETED: EventType.DELETED}
_MAX_BATCH = 256
_SCHEMA = """
CREATE TABLE IF NOT EXISTS log (
    rev INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    event INTEGER NOT NULL,
    prev_rev INTEGER,
    value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS log_key_rev ON log (key, rev);
CREATE TABLE IF NOT EXISTS current (key TEXT PRIMARY KEY, rev INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
"""

T = TypeVar("T")


_Changes = list[tuple[StoredObject, WatchEvent]]
"""What one write stored, one entry per key, at consecutive revisions."""
_Apply = Callable[[sqlite3.Connection, int], _Changes | None]


@dataclass
class _Write:
    """A queued write: ``apply`` runs on the writer thread inside the batch transaction,
    given the first revision it may use; it uses one per key it changes."""

    apply: _Apply
    future: asyncio.Future[list[StoredObject]]
    result: list[StoredObject] | BaseException = field(default_factory=list)
    events: list[WatchEvent] = field(default_factory=list)


class SQLiteStore:
    def __init__(self, path: str | Path, *, history: int = WATCH_WINDOW) -> None:
        if history < 1:
            raise ValueError("history must keep at least one revision")
        self.path = str(path)
        self.history = history
        self._fanout = Fanout()
        self._revision = 1
        self._compacted = 0
        self._pending_compacted = 0
        self._queue: queue.Queue[_Write | None] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._readers: ThreadPoolExecutor | None = None
        self._local = threading.local()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reader_connections: list[sqlite3.Connection] = []
        self._point_reader: sqlite3.Connection | None = None
        self._connections_lock = threading.Lock()
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        ready: asyncio.Future[None] = self._loop.create_future()
        self._writer = threading.Thread(
            target=self._writer_main, args=(ready,), name="sqlite-writer", daemon=True
        )
        self._writer.start()
        await ready
        self._fanout.revision = self._revision
        self._readers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sqlite-reader")
        self._point_reader = self._connect()
        self._point_reader.execute("PRAGMA query_only=ON")
        # Never wait on the event loop: a busy database sends the read to a reader thread.
        self._point_reader.execute("PRAGMA busy_timeout=0")

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._fanout.close_all()
        self._queue.put(None)
        if self._writer is not None:
            await asyncio.to_thread(self._writer.join)
        if self._readers is not None:
            await asyncio.to_thread(self._readers.shutdown, True)
        with self._connections_lock:
            for conn in self._reader_connections:
                conn.close()
            self._reader_connections.clear()
        if self._point_reader is not None:
            self._point_reader.close()
            self._point_reader = None

    @property
    def revision(self) -> int:
        return self._revision

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    async def current_revision(self) -> int:
        # Events are published before writers hear of success, so the published
        # revision already covers every acknowledged write, and its events are queued
        # for every watch by the time a caller sees it.
        return self._fanout.revision

    def readiness(self) -> dict[str, bool]:
        return {"sqlite": self._loop is not None and not self._closed}

    # -- connections ---------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA busy_timeout=10000")
        return conn

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only=ON")
            self._local.conn = conn
            with self._connections_lock:
                self._reader_connections.append(conn)
        return conn

    async def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._closed or self._readers is None or self._loop is None:
            raise StorageUnavailableError("", "the store is not running")

        def run() -> T:
            conn = self._reader()
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                conn.execute("COMMIT")

        try:
            return await self._loop.run_in_executor(self._readers, run)
        except sqlite3.Error as exc:
            raise StorageUnavailableError("", f"storage read failed: {exc}") from exc

    # -- the writer thread -------------------------------------------------------

    def _writer_main(self, ready: asyncio.Future[None]) -> None:
        assert self._loop is not None
        loop = self._loop
        try:
            conn = self._connect()
            conn.executescript(_SCHEMA)
            max_rev = conn.execute("SELECT max(rev) FROM log").fetchone()[0]
            row = conn.execute("SELECT value FROM meta WHERE name='compacted'").fetchone()
            self._compacted = row[0] if row else 0
            self._revision = max(max_rev or 0, self._compacted, 1)
        except BaseException as exc:
            loop.call_soon_threadsafe(ready.set_exception, exc)
            return
        loop.call_soon_threadsafe(ready.set_result, None)
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    break
                batch = [first]
                stop = False
                while len(batch) < _MAX_BATCH:
                    try:
                        nxt = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is None:
                        stop = True
                        break
                    batch.append(nxt)
                try:
                    self._commit_batch(conn, batch)
                except Exception as exc:  # never let the writer thread die silently
                    failure = StorageUnavailableError("", f"storage write failed: {exc}")
                    for write in batch:
                        loop.call_soon_threadsafe(_settle, write.future, failure)
                if stop:
                    break
        finally:
            conn.close()

    def _commit_batch(self, conn: sqlite3.Connection, batch: list[_Write]) -> None:
        assert self._loop is not None
        revision = self._revision
        # Compaction takes effect (and may answer 410) only once its transaction commits.
        self._pending_compacted = self._compacted
        try:
            conn.execute("BEGIN IMMEDIATE")
            for write in batch:
                conn.execute("SAVEPOINT w")
                try:
                    changes = write.apply(conn, revision + 1)
                    if changes is not None:
                        write.result = [stored for stored, _ in changes]
                        write.events = [event for _, event in changes]
                        revision += len(changes)
                    conn.execute("RELEASE w")
                except (StorageError, ValueError, TypeError) as exc:
                    # One bad write (a failed precondition, an unencodable object) fails
                    # alone; the rest of the batch still commits.
                    conn.execute("ROLLBACK TO w")
                    conn.execute("RELEASE w")
                    write.result = exc
            if revision - self._compacted > self.history + max(self.history // 10, 100):
                self._compact(conn, revision - self.history)
            conn.execute("COMMIT")
        except Exception as exc:  # roll back whatever went wrong, then fail the whole batch
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            failure = StorageUnavailableError("", f"storage write failed: {exc}")
            for write in batch:
                self._loop.call_soon_threadsafe(_settle, write.future, failure)
            return
        self._revision = revision
        self._compacted = self._pending_compacted
        # Events are published in revision order before any writer is told it succeeded,
        # so a client that saw its write acknowledged can watch from its revision.
        events = [e for w in batch if not isinstance(w.result, BaseException) for e in w.events]
        self._loop.call_soon_threadsafe(self._publish, events)
        for write in batch:
            self._loop.call_soon_threadsafe(_settle, write.future, write.result)

    def _publish(self, events: list[WatchEvent]) -> None:
        for event in events:
            self._fanout.publish(event)

    def _compact(self, conn: sqlite3.Connection, revision: int) -> None:
        self._pending_compacted = max(self._pending_compacted, revision)
        conn.execute(
            "DELETE FROM log WHERE rev <= ?1 AND (event = 2 OR EXISTS ("
            " SELECT 1 FROM log n WHERE n.key = log.key AND n.rev > log.rev AND n.rev <= ?1))",
            (revision,),
        )
        conn.execute(
            "INSERT INTO meta(name, value) VALUES ('compacted', ?1)"
            " ON CONFLICT(name) DO UPDATE SET value = ?1",
            (revision,),
        )

    async def _submit(self, apply: _Apply) -> list[StoredObject]:
        if self._closed or self._loop is None:
            raise StorageUnavailableError("", "the store is not running")
        future: asyncio.Future[list[StoredObject]] = self._loop.create_future()
        self._queue.put(_Write(apply, future))
        return await future

    async def _write(
        self, apply: Callable[[sqlite3.Connection, int], tuple[StoredObject, WatchEvent]]
    ) -> StoredObject:
        (stored,) = await self._submit(lambda conn, rev: [apply(conn, rev)])
        return stored

    async def compact(self, revision: int) -> None:
        """Drop history at or below ``revision`` now (normally automatic)."""

        def apply(conn: sqlite3.Connection, _next: int) -> None:
            self._compact(conn, min(revision, self._revision))

        await self._submit(apply)

    # -- writes ------------------------------------------------------------------

    async def create(self, key: str, obj: dict[str, Any]) -> StoredObject:
        return await self._write(lambda conn, rev: self._insert(conn, rev, key, obj))

    async def create_many(
        self, items: Sequence[tuple[str, dict[str, Any]]]
    ) -> builtins.list[StoredObject]:
        check_distinct([key for key, _ in items])
        if not items:
            return []

        def apply(conn: sqlite3.Connection, rev: int) -> _Changes:
            # Check every key first, so the error names the first one taken.
            for key, _ in items:
                if conn.execute("SELECT 1 FROM current WHERE key = ?", (key,)).fetchone():
                    raise KeyExistsError(key)
            return [self._insert(conn, rev + i, key, obj) for i, (key, obj) in enumerate(items)]

        return await self._submit(apply)

    @staticmethod
    def _insert(
        conn: sqlite3.Connection, rev: int, key: str, obj: dict[str, Any]
    ) -> tuple[StoredObject, WatchEvent]:
        if conn.execute("SELECT 1 FROM current WHERE key = ?", (key,)).fetchone():
            raise KeyExistsError(key)
        set_resource_version(obj, rev)
        raw = orjson.dumps(obj)
        conn.execute("INSERT INTO log(rev, key, event, value) VALUES (?, ?, 0, ?)", (rev, key, raw))
        conn.execute("INSERT INTO current(key, rev) VALUES (?, ?)", (key, rev))
        stored = StoredObject(key, rev, raw, obj)
        return stored, WatchEvent(EventType.ADDED, stored)

    async def update(
        self, key: str, obj: dict[str, Any], *, expected_revision: int | None
    ) -> StoredObject:
        def apply(conn: sqlite3.Connection, rev: int) -> tuple[StoredObject, WatchEvent]:
            prev = self._current(conn, key, expected_revision)
            set_resource_version(obj, rev)
            raw = orjson.dumps(obj)
            conn.execute(
                "INSERT INTO log(rev, key, event, prev_rev, value) VALUES (?, ?, 1, ?, ?)",
                (rev, key, prev.revision, raw),
            )
            conn.execute("UPDATE current SET rev = ? WHERE key = ?", (rev, key))
            stored = StoredObject(key, rev, raw, obj)
            return stored, WatchEvent(EventType.MODIFIED, stored, prev)

        return await self._write(apply)

    async def delete(self, key: str, *, expected_revision: int | None) -> StoredObject:
        return await self._write(lambda conn, rev: self._remove(conn, rev, key, expected_revision))

    async def delete_many(
        self, items: Sequence[tuple[str, int | None]]
    ) -> builtins.list[StoredObject]:
        check_distinct([key for key, _ in items])
        if not items:
            return []

        def apply(conn: sqlite3.Connection, rev: int) -> _Changes:
            # Check every precondition first, so the error is that of the first key.
            for key, expected in items:
                self._current(conn, key, expected)
            return [
                self._remove(conn, rev + i, key, expected)
                for i, (key, expected) in enumerate(items)
            ]

        return await self._submit(apply)

    def _remove(
        self, conn: sqlite3.Connection, rev: int, key: str, expected: int | None
    ) -> tuple[StoredObject, WatchEvent]:
        prev = self._current(conn, key, expected)
        last = prev.copy()
        set_resource_version(last, rev)
        raw = orjson.dumps(last)
        conn.execute(
            "INSERT INTO log(rev, key, event, prev_rev, value) VALUES (?, ?, 2, ?, ?)",
            (rev, key, prev.revision, raw),
        )
        conn.execute("DELETE FROM current WHERE key = ?", (key,))
        stored = StoredObject(key, rev, raw, last)
        return stored, WatchEvent(EventType.DELETED, stored, prev)

    @staticmethod
    def _current(conn: sqlite3.Connection, key: str, expected: int | None) -> StoredObject:
        row = conn.execute(
            "SELECT l.rev, l.value FROM current c JOIN log l ON l.rev = c.rev WHERE c.key = ?",
            (key,),
        ).fetchone()
        if row is None:
            raise KeyNotFoundError(key)
        if expected is not None and row[0] != expected:
            raise PreconditionFailedError(key, expected, row[0])
        return StoredObject(key, row[0], row[1])

    # -- reads -------------------------------------------------------------------

    async def get(self, key: str) -> StoredObject | None:
        # One primary-key lookup costs a few microseconds, less than the hop to a reader
        # thread and back; so point reads run right here, on their own connection (WAL
        # readers never wait for the writer). Scans go to the reader threads.
        if self._closed or self._point_reader is None:
            raise StorageUnavailableError("", "the store is not running")
        try:
            row = _point_read(self._point_reader, key)
        except sqlite3.OperationalError:
            # Busy (the loop never waits for a lock): a reader thread may.
            row = await self._read(lambda conn: _point_read(conn, key))
        except sqlite3.Error as exc:
            raise StorageUnavailableError("", f"storage read failed: {exc}") from exc
        return StoredObject(key, row[0], row[1]) if row else None

    async def list(
        self, prefix: str, *, revision: int | None = None, start: str = "", limit: int = 0
    ) -> ListPage:
        low = max(prefix, start)
        high = prefix_end(prefix)
        fetch = limit + 1 if limit > 0 else -1

        def read(conn: sqlite3.Connection) -> ListPage:
            head = self._head_revision(conn)
            if revision is None or revision >= head:
                at = head
                rows = conn.execute(
                    "SELECT c.key, l.rev, l.value FROM current c JOIN log l ON l.rev = c.rev"
                    " WHERE c.key >= ? AND c.key < ? ORDER BY c.key LIMIT ?",
                    (low, high, fetch),
                ).fetchall()
            else:
                self._check_not_compacted(conn, revision)
                at = revision
                rows = conn.execute(
                    "SELECT l.key, l.rev, l.value FROM log l JOIN ("
                    "  SELECT key, max(rev) AS rev FROM log"
                    "  WHERE key >= ? AND key < ? AND rev <= ? GROUP BY key"
                    ") m ON l.rev = m.rev WHERE l.event != 2 ORDER BY l.key LIMIT ?",
                    (low, high, revision, fetch),
                ).fetchall()
            more = limit > 0 and len(rows) > limit
            items = [StoredObject(k, r, v) for k, r, v in (rows[:limit] if more else rows)]
            return ListPage(items, at, more)

        return await self._read(read)

    @staticmethod
    def _head_revision(conn: sqlite3.Connection) -> int:
        """The revision of this read transaction's snapshot.

        Compacting up to the newest revision can drop the newest rows (trailing deletes),
        so the snapshot is at least the compacted revision: nothing changed after it.
        """
        max_rev = conn.execute("SELECT max(rev) FROM log").fetchone()[0]
        row = conn.execute("SELECT value FROM meta WHERE name='compacted'").fetchone()
        return max(max_rev or 0, row[0] if row else 0, 1)

    def _check_not_compacted(self, conn: sqlite3.Connection, revision: int) -> None:
        row = conn.execute("SELECT value FROM meta WHERE name='compacted'").fetchone()
        compacted = row[0] if row else 0
        if revision < compacted:
            raise RevisionCompactedError(revision, compacted)

    async def _history(self, prefix: str, after: int) -> builtins.list[WatchEvent]:
        high = prefix_end(prefix)

        def read(conn: sqlite3.Connection) -> builtins.list[WatchEvent]:
            self._check_not_compacted(conn, after)
            rows = conn.execute(
                "SELECT l.rev, l.key, l.event, l.value, p.rev, p.value FROM log l"
                " LEFT JOIN log p ON p.rev = l.prev_rev"
                " WHERE l.rev > ? AND l.key >= ? AND l.key < ? ORDER BY l.rev",
                (after, prefix, high),
            ).fetchall()
            return [
                WatchEvent(
                    _EVENT_TYPES[event],
                    StoredObject(key, rev, value),
                    StoredObject(key, prev_rev, prev_value) if prev_rev is not None else None,
                )
                for rev, key, event, value, prev_rev, prev_value in rows
            ]

        return await self._read(read)

    def watch(self, prefix: str, revision: int) -> _SQLiteWatch:
        return _SQLiteWatch(self, prefix, revision)


class _SQLiteWatch(FollowingWatch):
    def __init__(self, store: SQLiteStore, prefix: str, revision: int) -> None:
        super().__init__(revision)
        self._store = store
        self._subscription = store._fanout.subscribe(prefix, prefix_end(prefix))
        self._prefix = prefix
        self._revision = revision

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[WatchEvent]:
        store, sub = self._store, self._subscription
        try:
            if self._revision < store.compacted_revision:
                raise RevisionCompactedError(self._revision, store.compacted_revision)
            history = await store._history(self._prefix, self._revision)
        except BaseException:
            sub.close()
            raise
        async for event in self._replay_then_follow(history, sub):
            yield event

    def _head(self) -> int:
        return self._store._fanout.revision

    async def close(self) -> None:
        self._subscription.close()


def _point_read(conn: sqlite3.Connection, key: str) -> Any:
    return conn.execute(
        "SELECT l.rev, l.value FROM current c JOIN log l ON l.rev = c.rev WHERE c.key = ?",
        (key,),
    ).fetchone()


def _settle(
    future: asyncio.Future[list[StoredObject]], result: list[StoredObject] | BaseException
) -> None:
    if future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)

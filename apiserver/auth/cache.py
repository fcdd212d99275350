"""Answers kept for a while: TokenReview, SubjectAccessReview and certificate verification.

A small bounded map from key to value with a time to live per entry, read against an
injected monotonic clock (so tests move time by hand). ``get_or_load`` also folds
concurrent lookups of one key into one load, as Kubernetes' cached token authenticator does,
so a burst of requests with a new token makes one TokenReview and not a hundred.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

Clock = Callable[[], float]


class TTLCache(Generic[K, V]):
    def __init__(self, max_entries: int = 4096, clock: Clock = time.monotonic) -> None:
        self.max_entries = max_entries
        self.clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._loading: dict[K, asyncio.Future[tuple[V, float]]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        """The value of ``key`` while it is fresh, else None."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self.clock() >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V, ttl: float) -> None:
        """Keep ``value`` for ``ttl`` seconds (not at all when ``ttl`` is not positive)."""
        if ttl <= 0:
            self._entries.pop(key, None)
            return
        self._entries[key] = (self.clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    async def get_or_load(self, key: K, load: Callable[[], Awaitable[tuple[V, float]]]) -> V:
        """The cached value, or the one ``load`` returns with its time to live.

        Callers asking for a key while it loads wait for that load. A load that raises is
        not cached; every caller waiting on it gets the exception.
        """
        cached = self.get(key)
        if cached is not None:
            return cached
        pending = self._loading.get(key)
        if pending is not None:
            value, _ = await asyncio.shield(pending)
            return value
        future: asyncio.Future[tuple[V, float]] = asyncio.get_running_loop().create_future()
        self._loading[key] = future
        try:
            value, ttl = await load()
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning without waiters
            raise
        finally:
            del self._loading[key]
        self.put(key, value, ttl)
        future.set_result((value, ttl))
        return value

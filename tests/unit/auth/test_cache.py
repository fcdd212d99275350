"""auth/cache.py: entries live for their time to live on an injected clock, the map stays
bounded, and concurrent loads of one key are one load."""

from __future__ import annotations

import asyncio

import pytest

from apiserver.auth.cache import TTLCache


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_entry_lives_for_its_ttl() -> None:
    clock = Clock()
    cache: TTLCache[str, str] = TTLCache(clock=clock)
    cache.put("k", "v", 10)
    clock.now += 9.99
    assert cache.get("k") == "v"
    clock.now += 0.01
    assert cache.get("k") is None
    assert len(cache) == 0


def test_non_positive_ttl_keeps_nothing() -> None:
    cache: TTLCache[str, str] = TTLCache(clock=Clock())
    cache.put("k", "v", 10)
    cache.put("k", "w", 0)
    assert cache.get("k") is None


def test_least_recently_used_entry_goes_first() -> None:
    cache: TTLCache[str, int] = TTLCache(max_entries=2, clock=Clock())
    cache.put("a", 1, 10)
    cache.put("b", 2, 10)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3, 10)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)


async def test_concurrent_loads_of_a_key_are_one_load() -> None:
    clock = Clock()
    cache: TTLCache[str, str] = TTLCache(clock=clock)
    calls = 0
    release = asyncio.Event()

    async def load() -> tuple[str, float]:
        nonlocal calls
        calls += 1
        await release.wait()
        return "user", 10.0

    waiters = [asyncio.create_task(cache.get_or_load("token", load)) for _ in range(5)]
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*waiters) == ["user"] * 5
    assert calls == 1
    assert await cache.get_or_load("token", load) == "user"
    assert calls == 1
    clock.now += 10
    assert await cache.get_or_load("token", load) == "user"
    assert calls == 2


async def test_failed_load_is_not_cached_and_reaches_every_waiter() -> None:
    cache: TTLCache[str, str] = TTLCache(clock=Clock())
    release = asyncio.Event()

    async def failing() -> tuple[str, float]:
        await release.wait()
        raise RuntimeError("unreachable")

    async def working() -> tuple[str, float]:
        return "ok", 10.0

    waiters = [asyncio.create_task(cache.get_or_load("k", failing)) for _ in range(3)]
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*waiters, return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    assert await cache.get_or_load("k", working) == "ok"


@pytest.mark.parametrize("ttl", [0.0, -1.0])
async def test_load_with_no_ttl_is_answered_but_not_kept(ttl: float) -> None:
    cache: TTLCache[str, str] = TTLCache(clock=Clock())

    async def load() -> tuple[str, float]:
        return "v", ttl

    assert await cache.get_or_load("k", load) == "v"
    assert cache.get("k") is None

"""The raw store: SQLiteStore called in-process (no HTTP), as many calls in flight as connections."""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import uvloop

from apiserver.storage.sqlite import SQLiteStore

from .objects import NAME_MARKER, store_key, store_prefix
from .stats import RoundResult, Series, percentile

Operation = Callable[[int], Awaitable[object]]


async def _timed(operation: Operation, concurrency: int, seconds: float) -> RoundResult:
    latencies: list[float] = []
    counter = itertools.count()
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        while time.perf_counter() < deadline:
            n = next(counter)
            began = time.perf_counter()
            await operation(n)
            latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - began
    latencies.sort()
    return RoundResult(
        ops=len(latencies),
        seconds=elapsed,
        p50_ms=percentile(latencies, 50) * 1e3,
        p99_ms=percentile(latencies, 99) * 1e3,
    )


async def _series(
    label: str, operation: Operation, concurrency: int, warmup: float, rounds: int, seconds: float
) -> Series:
    series = Series(label)
    await _timed(operation, concurrency, warmup)
    for _ in range(rounds):
        result = await _timed(operation, concurrency, seconds)
        series.add(result)
        print(
            f"  {label} in-process: {result.rate:,.0f}/s,"
            f" p50 {result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms",
            file=sys.stderr,
        )
    return series


async def _suite(
    path: Path,
    objects: list[dict[str, Any]],
    create_body: bytes,
    concurrency: dict[str, int],
    warmup: float,
    rounds: int,
    seconds: float,
) -> dict[str, Series]:
    store = SQLiteStore(path)
    await store.start()
    try:
        await asyncio.gather(*(store.create(store_key(o["metadata"]["name"]), o) for o in objects))
        get_key = store_key(objects[0]["metadata"]["name"])
        prefix = store_prefix()
        template = create_body.decode()
        names = itertools.count()

        async def get(_n: int) -> object:
            found = await store.get(get_key)
            assert found is not None
            return found

        async def list_all(_n: int) -> object:
            page = await store.list(prefix)
            assert len(page.items) == len(objects)
            return page

        async def create(_n: int) -> object:
            name = f"bench-store-{next(names)}"
            obj = orjson.loads(template.replace(NAME_MARKER, name))
            return await store.create(store_key(name), obj)

        result = {
            "get": await _series(
                "SQLiteStore.get", get, concurrency["get"], warmup, rounds, seconds
            ),
            "list": await _series(
                "SQLiteStore.list", list_all, concurrency["list"], warmup, rounds, seconds
            ),
        }
        result["create"] = await _series(
            "SQLiteStore.create", create, concurrency["create"], warmup, rounds, seconds
        )
        return result
    finally:
        await store.close()


def run(
    path: Path,
    objects: list[dict[str, Any]],
    create_body: bytes,
    concurrency: dict[str, int],
    *,
    warmup: float,
    rounds: int,
    seconds: float,
) -> dict[str, Series]:
    """Series ``get``, ``list`` and ``create`` on a fresh store at ``path`` seeded with ``objects``.

    ``create_body`` is an object as the server stores it, its name ``NAME_MARKER``.
    """
    return uvloop.run(_suite(path, objects, create_body, concurrency, warmup, rounds, seconds))

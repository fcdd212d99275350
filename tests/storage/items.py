"""What the store tests write and how they read a watch: keys under one prefix, small items,
and the next events of a watch behind a safety net (a broken watch fails the test instead of
hanging it; never a measure of speed). Shared by the conformance suite and the SQLite and
watch-cache tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from apiserver.storage import WatchEvent

PREFIX = "/test/items/"
HANG = 30.0


def key(name: str) -> str:
    return PREFIX + name


def item(name: str, n: int = 0, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "n": n, **extra}


async def next_event(events: AsyncIterator[WatchEvent]) -> WatchEvent:
    return await asyncio.wait_for(anext(events), HANG)


async def collect(events: AsyncIterator[WatchEvent], count: int) -> list[WatchEvent]:
    return [await next_event(events) for _ in range(count)]

"""Newline-delimited JSON, as a watch streams it: one event a line.

Lines are split by hand over the raw chunks, with no limit on a line's length: one
ResourceSlice can be larger than an HTTP library's line reader allows.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import orjson


async def lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """The non-blank lines of a byte stream, without their newline; a last line without one
    is a line too."""
    pending = bytearray()
    async for chunk in chunks:
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", start)) >= 0:
            line = bytes(pending[start:end])
            start = end + 1
            if line.strip():
                yield line
        del pending[:start]
    if bytes(pending).strip():
        yield bytes(pending)


async def objects(chunks: AsyncIterable[bytes]) -> AsyncIterator[Any]:
    """The decoded JSON value of each line."""
    async for line in lines(chunks):
        yield orjson.loads(line)

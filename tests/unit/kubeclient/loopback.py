"""A hand-written HTTP/1.1 answer on a loopback socket, for the tests that need a server
behaving in one exact way on the wire (closing a kept-alive connection, acting as a proxy)."""

from __future__ import annotations

import asyncio

POD = b'{"kind":"Pod"}'


async def answer_json(
    writer: asyncio.StreamWriter, body: bytes = POD, *, close: bool = False
) -> None:
    """``200 OK`` with ``body`` as JSON; ``close``: say the connection ends with it."""
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        + (b"Connection: close\r\n" if close else b"")
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()

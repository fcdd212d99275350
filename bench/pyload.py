"""A Python load generator, for machines without wrk: ``python -m bench.pyload < spec.json``.

Reads a ``LoadSpec`` as JSON on stdin and prints a ``RoundResult`` as JSON. Each of the
spec's connections is a keep-alive HTTP/1.1 stream over TLS that sends one request, reads
the whole answer (Content-Length framed), and sends the next.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time
from dataclasses import asdict
from urllib.parse import urlsplit

import uvloop

from devtools.waiting import eventually

from .load import LoadSpec
from .objects import NAME_MARKER
from .stats import RoundResult, percentile


class _Tally:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors = 0
        self.connected = 0


def _request(spec: LoadSpec, host: str, path: str, name: str | None) -> bytes:
    lines = [f"{spec.method} {path} HTTP/1.1", f"Host: {host}", "Accept: application/json"]
    lines += [f"{key}: {value}" for key, value in spec.headers.items()]
    body = b""
    if spec.body is not None:
        body = spec.body.replace(NAME_MARKER, name or "").encode()
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _connection(
    spec: LoadSpec, index: int, start: asyncio.Event, deadline: list[float], tally: _Tally
) -> None:
    url = urlsplit(spec.url)
    host, port = url.hostname or "127.0.0.1", url.port or 443
    path = url.path + (f"?{url.query}" if url.query else "")
    context = (
        ssl.create_default_context(cafile=spec.ca) if spec.ca else ssl.create_default_context()
    )
    reader, writer = await asyncio.open_connection(host, port, ssl=context, server_hostname=host)
    tally.connected += 1
    static = None if spec.body is not None else _request(spec, url.netloc, path, None)
    await start.wait()
    counter = 0
    try:
        while time.perf_counter() < deadline[0]:
            counter += 1
            name = f"bench-{spec.tag}-{index}-{counter}"
            payload = static or _request(spec, url.netloc, path, name)
            began = time.perf_counter()
            writer.write(payload)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = 0
            for line in head.split(b"\r\n")[1:]:
                key, _, value = line.partition(b":")
                if key.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            tally.latencies.append(time.perf_counter() - began)
            if status >= 400:
                tally.errors += 1
    finally:
        writer.close()


async def run(spec: LoadSpec) -> RoundResult:
    tally = _Tally()
    start = asyncio.Event()
    deadline = [0.0]
    tasks = [
        asyncio.create_task(_connection(spec, i, start, deadline, tally))
        for i in range(spec.connections)
    ]
    # Every connection connects and shakes hands (or fails) before the clock starts.
    await eventually(
        lambda: tally.connected + sum(t.done() for t in tasks) >= len(tasks),
        "every load connection to connect",
        timeout=60,
    )
    began = time.perf_counter()
    deadline[0] = began + spec.duration
    start.set()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    elapsed = time.perf_counter() - began
    tally.errors += sum(1 for o in outcomes if isinstance(o, BaseException))
    latencies = sorted(tally.latencies)
    return RoundResult(
        ops=len(latencies),
        seconds=elapsed,
        p50_ms=percentile(latencies, 50) * 1e3,
        p99_ms=percentile(latencies, 99) * 1e3,
        errors=tally.errors,
    )


def main() -> None:
    spec = LoadSpec(**json.loads(sys.stdin.read()))
    result = uvloop.run(run(spec))
    print(json.dumps(asdict(result)))


if __name__ == "__main__":
    main()

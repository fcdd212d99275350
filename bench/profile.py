"""Where the request path spends its time: py-spy samples of this server under load.

The server is started as ``make run`` starts it (SQLite, HTTPS, one uvicorn worker) and
seeded with the HTTP benchmark's 1,000 objects; for each of GET one object, LIST all of them
and create, the load generator drives it while py-spy samples the server process. Reported:
the functions where most samples stand (self) and the layers they pass through (inclusive),
as shares of the samples of the server's event-loop thread; threads that only wait (the
SQLite reader pool, idle) are left out.
"""

from __future__ import annotations

import collections
import itertools
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from .load import Generator, LoadSpec
from .objects import COLLECTION_PATH, create_template, object_path, patch
from .targets import APIServerTarget

SECTION = "http-profile"
SECONDS = 10
SHOWN = 12
_IDLE = ("futures/thread.py", "threading.py", "Condition.wait", "Runner.run (asyncio")


@dataclass
class Profile:
    name: str
    samples: int
    own: list[tuple[str, float]]
    through: list[tuple[str, float]]
    rate: float
    all_through: list[tuple[str, float]] = field(default_factory=list)
    """Every frame the samples pass through, with its share (``through`` is the top)."""


def _frame(text: str) -> str:
    name, _, where = text.partition(" (")
    path = where.rstrip(")").split(":")[0]
    return f"{name} ({'/'.join(path.split('/')[-2:])})"


def profile_of(raw: Path, name: str, rate: float) -> Profile:
    """The samples of the event loop's thread in py-spy's raw output, busy ones only."""
    own: collections.Counter[str] = collections.Counter()
    through: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or "Runner.run" not in stack:
            continue  # not the event loop's thread
        frames = [_frame(f) for f in stack.split(";")]
        if any(marker in frames[-1] for marker in _IDLE):
            continue
        n = int(count)
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            through[frame] += n
    if total == 0:
        raise RuntimeError(f"py-spy recorded no samples for {name}")

    def shares(counter: collections.Counter[str]) -> list[tuple[str, float]]:
        return [(f, n / total) for f, n in counter.most_common()]

    layers = [
        (f, s)
        for f, s in shares(through)
        if not any(k in f for k in ("runpy", "__main__", "cli.py", "serve.py", "uvicorn/server"))
    ]
    return Profile(name, total, shares(own)[:SHOWN], layers[:SHOWN], rate, layers)


def run(generator: Generator, log: Callable[[str], None]) -> list[Profile]:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    profiles = []
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        server = APIServerTarget("server", Path(tmp))
        server.start()
        try:
            with server.client() as client:
                for i in range(1000):
                    client.post(COLLECTION_PATH, content=orjson.dumps(patch(f"bench-{i:04d}", i)))
            tags = itertools.count()
            cases = [
                ("GET one object (32 connections)", object_path("bench-0001"), None, 32),
                ("LIST 1,000 objects (8 connections)", COLLECTION_PATH, None, 8),
                ("create (32 connections)", COLLECTION_PATH, create_template().decode(), 32),
            ]
            for name, path, body, connections in cases:
                log(f"profiling {name}")
                raw = Path(tmp) / f"profile-{next(tags)}.txt"
                sampler = subprocess.Popen(
                    [
                        spy,
                        "record",
                        "-p",
                        str(server.pid),
                        "-d",
                        str(SECONDS),
                        "-f",
                        "raw",
                        "-r",
                        "200",
                        "-o",
                        str(raw),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                result = generator.run(
                    LoadSpec(
                        url=server.url + path,
                        method="POST" if body else "GET",
                        headers=server.headers,
                        body=body,
                        connections=connections,
                        duration=SECONDS,
                        tag=f"p{next(tags)}",
                        ca=str(server.ca),
                    )
                )
                sampler.wait(timeout=SECONDS * 6)
                profiles.append(profile_of(raw, name, result.ops / result.seconds))
        finally:
            server.stop()
    return profiles


def render(profiles: list[Profile], date: str) -> str:
    lines = [
        "## Where a request's time goes: py-spy profiles of the server under load",
        "",
        f"Run: {date}; {SECONDS} s of load per case, sampled at 200 Hz. Shares are of the"
        " samples of the server's event-loop thread while it was busy (waiting threads and"
        " idle time left out). *Self*: the function on top of the stack (C code it calls"
        " counts to it: TLS encryption to uvicorn's send, JSON to orjson's caller);"
        " *through*: the layers the samples pass through.",
        "",
    ]
    for p in profiles:
        lines += [
            f"### {p.name}: {p.rate:,.0f} requests/s while sampled, {p.samples:,} samples",
            "",
            "| self | share | through | share |",
            "|---|---|---|---|",
        ]
        for (own, a), (through, b) in itertools.zip_longest(p.own, p.through, fillvalue=("", 0.0)):
            lines.append(
                f"| {own} | {a:.1%} | {through} | {b:.1%} |".replace("| | 0.0% |", "| | |")
            )
        lines.append("")
    return "\n".join(lines)

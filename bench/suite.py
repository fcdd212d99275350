"""The HTTP GET/LIST/create benchmark: this server beside bare Starlette and the raw store."""

from __future__ import annotations

import itertools
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from . import report, store
from .load import Generator, LoadSpec
from .objects import COLLECTION_PATH, NAME_MARKER, create_template, object_path, patch
from .stats import Series
from .targets import APIServerTarget, BareTarget, Target


@dataclass
class Settings:
    rounds: int = 5
    seconds: int = 3
    warmup: int = 2
    objects: int = 1000
    connections: dict[str, int] = field(
        default_factory=lambda: {"get": 32, "list": 8, "create": 32}
    )


@dataclass
class Comparison:
    """One benchmark: this server's series beside each baseline's."""

    title: str
    server: Series
    baselines: list[Series]
    connections: int


@dataclass
class Outcome:
    comparisons: list[Comparison]
    object_bytes: int
    list_bytes: int
    objects: int
    settings: Settings


def _seed(server: APIServerTarget, count: int) -> list[str]:
    names = [f"bench-{i:04d}" for i in range(count)]

    def create(index_name: tuple[int, str]) -> None:
        index, name = index_name
        with server.client() as client:
            response = client.post(COLLECTION_PATH, content=orjson.dumps(patch(name, index)))
            if response.status_code != 201:
                raise RuntimeError(f"seeding {name}: {response.status_code} {response.text}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, enumerate(names)))
    return names


class _Runner:
    def __init__(self, generator: Generator, settings: Settings) -> None:
        self.generator = generator
        self.settings = settings
        self.tags = itertools.count()

    def spec(self, target: Target, path: str, kind: str, body: str | None = None) -> LoadSpec:
        return LoadSpec(
            url=target.url + path,
            method="POST" if body is not None else "GET",
            headers=target.headers,
            body=body,
            connections=self.settings.connections[kind],
            tag=f"r{next(self.tags)}",
            ca=str(target.ca),
        )

    def compare(self, specs: list[tuple[Series, LoadSpec]]) -> None:
        """Warm each target up, then time rounds taking the targets in turn."""
        for _series, spec in specs:
            spec.duration = self.settings.warmup
            self.generator.run(spec)
        for _ in range(self.settings.rounds):
            for series, spec in specs:
                spec.duration = self.settings.seconds
                spec.tag = f"r{next(self.tags)}"
                result = self.generator.run(spec)
                if result.errors:
                    raise RuntimeError(f"{series.label}: {result.errors} failed requests")
                series.add(result)
                print(
                    f"  {series.label} {spec.method} {spec.url}: {result.rate:,.0f}/s,"
                    f" p50 {result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms",
                    file=sys.stderr,
                )


def run(generator: Generator, settings: Settings) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        workdir = Path(tmp)
        server = APIServerTarget("apiserver", workdir)
        bare: BareTarget | None = None
        try:
            server.start()
            names = _seed(server, settings.objects)
            with server.client() as client:
                get_body = client.get(object_path(names[0])).content
                list_body = client.get(COLLECTION_PATH).content
            items: list[dict[str, Any]] = orjson.loads(list_body)["items"]
            stored_form = dict(items[0])
            stored_form["metadata"] = {**stored_form["metadata"], "name": NAME_MARKER}
            bare = BareTarget(
                "bare",
                workdir,
                bodies={object_path(names[0]): get_body, COLLECTION_PATH: list_body},
            )
            bare.start()
            with bare.client() as client:
                if client.get(object_path(names[0])).content != get_body:
                    raise RuntimeError("the bare server does not answer the server's bytes")

            runner = _Runner(generator, settings)
            comparisons = []
            for kind, path, title in (
                ("get", object_path(names[0]), "GET one ResourceSlicePatch"),
                ("list", COLLECTION_PATH, f"LIST {len(names):,} ResourceSlicePatches"),
            ):
                mine, ceiling = Series("this server"), Series("bare Starlette")
                runner.compare(
                    [
                        (mine, runner.spec(server, path, kind)),
                        (ceiling, runner.spec(bare, path, kind)),
                    ]
                )
                comparisons.append(Comparison(title, mine, [ceiling], settings.connections[kind]))
            bare.stop()
            bare = None

            raw = store.run(
                workdir / "store" / "raw.db",
                items,
                orjson.dumps(stored_form),
                settings.connections,
                warmup=settings.warmup,
                rounds=settings.rounds,
                seconds=settings.seconds,
            )
            comparisons[0].baselines.append(raw["get"])
            comparisons[1].baselines.append(raw["list"])

            created = Series("this server")
            body = create_template().decode()
            runner.compare([(created, runner.spec(server, COLLECTION_PATH, "create", body))])
            comparisons.append(
                Comparison(
                    "POST (create) one ResourceSlicePatch",
                    created,
                    [raw["create"]],
                    settings.connections["create"],
                )
            )
            return Outcome(comparisons, len(get_body), len(list_body), len(names), settings)
        finally:
            if bare is not None:
                bare.stop()
            server.stop()


# -- the section in RESULTS.md ---------------------------------------------------------

SECTION = "http-get-list"


def _us(rate: float) -> float:
    return 1e6 / rate if rate > 0 else 0.0


def _bounds(outcome: Outcome) -> list[str]:
    """One sentence per table on what bounds it, from the measured figures."""
    get, lst, create = outcome.comparisons
    server, bare, raw = (s.rate.median for s in (get.server, *get.baselines))
    added = _us(server) - _us(bare)
    get_note = (
        f"Bound by the server's CPU (one event loop, the GIL): ≈{_us(server):.0f} µs per GET"
        f" against ≈{_us(bare):.0f} µs for bare Starlette, which sends the same bytes with no"
        f" routing, authentication, authorization or read. The ≈{max(added, 0):.0f}"
        " µs between them is what the server adds: authentication and authorization, parsing"
        " the request, the read from the watch cache (gets and lists are served from memory;"
        f" the store's own read takes ≈{_us(raw):.0f} µs in-process) and the metrics."
    )
    server, bare, raw = (s.rate.median for s in (lst.server, *lst.baselines))
    against_store = "less" if server > raw else "more"
    list_note = (
        f"Served from the watch cache, not the store: a LIST costs ≈{_us(server) / 1e3:.1f} ms"
        f" of the server's time (one over its throughput), {against_store} than reading the {outcome.objects:,} rows from SQLite"
        f" in-process (≈{_us(raw) / 1e3:.1f} ms). Of that, sending"
        f" {outcome.list_bytes / 1e6:.2f} MB over TLS is what bare Starlette spends on the same"
        f" bytes, ≈{_us(bare) / 1e3:.1f} ms; the other"
        f" ≈{max(_us(server) - _us(bare), 0) / 1e3:.1f} ms is the server's own work"
        " (authentication, the cache's page, joining the items' bytes)."
    )
    server, raw = create.server.rate.median, create.baselines[0].rate.median
    create_note = (
        f"Bound by the server's CPU per create (decoding, validation, managed fields, uid;"
        " for a ResourceSlicePatch also the device view taking it in and the patch status"
        " controller's rate-limited status writes, which the store baseline does not make):"
        f" ≈{_us(server):.0f} µs each through HTTP, while the store alone, sharing fsyncs"
        f" among the writes in flight (group commit), takes ≈{_us(raw):.0f} µs per create."
    )
    return [get_note, list_note, create_note]


def render(outcome: Outcome, generator: str, date: str) -> str:
    s = outcome.settings
    lines = [
        "## HTTP GET, LIST and create: this server against bare Starlette and the raw store",
        "",
        f"Run: {date}; {generator}; {s.rounds} rounds of {s.seconds} s per target after"
        f" {s.warmup} s of warm-up, the targets taken in turn within each round.",
        "",
        "- *this server*: `python -m apiserver serve` over HTTPS with the admin token, one"
        " uvicorn worker (uvloop, httptools), SQLite store on local disk behind the watch"
        " cache (the default).",
        "- *bare Starlette*: the ceiling for any Python server here: uvicorn started the same way"
        " (same certificate, uvloop, httptools, one worker) answering the same bytes, fetched"
        " from this server and held in memory; no authentication.",
        "- *SQLiteStore*: the store's own `get`/`list`/`create` called in-process (no HTTP), as"
        " many calls in flight as the HTTP benchmark has connections.",
        "- Ratio: this server ÷ baseline: for throughput the fraction of the baseline reached,"
        " for latency how many times longer.",
        "",
    ]
    sizes = [
        f"{outcome.object_bytes:,} bytes",
        f"{outcome.list_bytes:,} bytes",
        "fresh name each request",
    ]
    for comparison, size, note in zip(outcome.comparisons, sizes, _bounds(outcome), strict=True):
        lines += [
            f"### {comparison.title} ({size}, {comparison.connections} connections)",
            "",
            report.table(comparison.server, comparison.baselines, "req/s"),
            "",
            note,
            "",
        ]
    return "\n".join(lines)

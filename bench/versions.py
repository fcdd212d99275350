"""ResourcePoolStatusRequest read in upstream's v1alpha3 (converted) beside the stored
v1alpha1 (as stored): what converting at the edge costs a read.

One server; answered requests of ``POOLS`` pools each, their status written through the
v1alpha1 status subresource as the controller writes it. The same URLs are read in both
versions with the load generator, the two versions' rounds taken in turn: GET of one
request, and LIST of ``LISTED`` requests. v1alpha1 answers with the stored bytes; v1alpha3
with each object converted and re-encoded, once per object revision (the converting store
keeps them), so the in-process cost of one conversion is measured beside decoding the
stored bytes.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from apiserver.api.resource import DRA_GROUP
from apiserver.api.resource import pool_status_request_to_v1alpha3 as to_v1alpha3

from . import report
from .load import Generator, LoadSpec
from .stats import Figure, Series
from .targets import APIServerTarget

SECTION = "versions"
CONNECTIONS = 32
POOLS = 100
LISTED = 20
VERSIONS = ("v1alpha1", "v1alpha3")
CONVERSIONS = 2_000


@dataclass
class Settings:
    rounds: int = 5
    seconds: int = 3
    warmup: int = 2


@dataclass
class Outcome:
    get: dict[str, Series]
    list: dict[str, Series]
    convert_us: Figure
    """In-process: one request converted to v1alpha3 and encoded."""
    decode_us: Figure
    """In-process, the baseline: the stored bytes of the same request decoded."""
    settings: Settings = field(default_factory=Settings)


def _collection(version: str) -> str:
    return f"/apis/{DRA_GROUP}/{version}/resourcepoolstatusrequests"


def _status() -> dict[str, Any]:
    pools = [
        {
            "driver": "gpu.example.com",
            "poolName": f"node-{i:04d}",
            "nodeName": f"node-{i:04d}",
            "totalDevices": 8,
            "allocatedDevices": 3,
            "availableDevices": 4,
            "unavailableDevices": 1,
            "sliceCount": 1,
            "generation": 1,
        }
        for i in range(POOLS)
    ]
    now = "2026-11-25T00:00:00Z"
    condition = {
        "type": "Complete",
        "status": "True",
        "reason": "CalculationComplete",
        "message": f"Processed {POOLS} pools",
        "lastTransitionTime": now,
    }
    return {
        "observationTime": now,
        "pools": pools,
        "conditions": [condition],
        "truncated": False,
        "totalMatchingPools": POOLS,
    }


def _stored() -> dict[str, Any]:
    return {
        "apiVersion": f"{DRA_GROUP}/v1alpha1",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": "bench", "uid": "u", "resourceVersion": "1", "generation": 1},
        "spec": {"driver": "gpu.example.com", "limit": 100},
        "status": _status(),
    }


def _in_process(rounds: int) -> tuple[Figure, Figure]:
    """One request converted and encoded, beside its stored bytes decoded (µs each)."""
    stored = _stored()
    raw = orjson.dumps(stored)
    convert, decode = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(CONVERSIONS):
            orjson.dumps(to_v1alpha3(stored))
        convert.append((time.perf_counter() - start) / CONVERSIONS * 1e6)
        start = time.perf_counter()
        for _ in range(CONVERSIONS):
            orjson.loads(raw)
        decode.append((time.perf_counter() - start) / CONVERSIONS * 1e6)
    return Figure(convert), Figure(decode)


def _prepare(target: APIServerTarget) -> None:
    with target.client() as client:
        for i in range(LISTED):
            name = f"bench-{i:03d}"
            body = {
                "apiVersion": f"{DRA_GROUP}/v1alpha1",
                "kind": "ResourcePoolStatusRequest",
                "metadata": {"name": name},
                "spec": {"driver": "gpu.example.com"},
            }
            client.post(_collection("v1alpha1"), json=body).raise_for_status()
            client.patch(
                f"{_collection('v1alpha1')}/{name}/status",
                json={"status": _status()},
                headers={"Content-Type": "application/merge-patch+json"},
            ).raise_for_status()
        for version in VERSIONS:  # both versions serve all of them
            listed = client.get(_collection(version)).json()["items"]
            if len(listed) != LISTED:
                raise RuntimeError(f"{version}: {len(listed)} requests listed, not {LISTED}")


def _spec(target: APIServerTarget, path: str, seconds: int) -> LoadSpec:
    return LoadSpec(
        url=f"{target.url}{path}",
        headers=target.headers,
        connections=CONNECTIONS,
        duration=seconds,
        ca=str(target.ca),
    )


def _measure(
    generator: Generator, target: APIServerTarget, paths: dict[str, str], settings: Settings
) -> dict[str, Series]:
    for version, path in paths.items():
        warm = generator.run(_spec(target, path, settings.warmup))
        if warm.ops == 0 or warm.errors:
            raise RuntimeError(f"{version}: GET {path} failed during warm-up: {warm}")
    series = {version: Series(version) for version in paths}
    for _ in range(settings.rounds):
        for version, path in paths.items():
            series[version].add(generator.run(_spec(target, path, settings.seconds)))
    return series


def run(generator: Generator, settings: Settings) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="bench-versions-") as tmp:
        # No creation limit (the preparation creates many), no controller (the status is
        # written here, as the controller would).
        target = APIServerTarget(
            "apiserver",
            Path(tmp),
            extra=["--no-pool-status", "--pool-status-create-rate", "0"],
        )
        try:
            target.start()
            _prepare(target)
            print("versions: GET and LIST in v1alpha1 and v1alpha3, in turn", file=sys.stderr)
            get = _measure(
                generator,
                target,
                {v: f"{_collection(v)}/bench-000" for v in VERSIONS},
                settings,
            )
            listed = _measure(generator, target, {v: _collection(v) for v in VERSIONS}, settings)
        finally:
            target.stop()
    convert, decode = _in_process(settings.rounds)
    return Outcome(get, listed, convert, decode, settings)


def render(outcome: Outcome, generator: str, date: str) -> str:
    s = outcome.settings
    rows = ["| figure | v1alpha3 (converted) | v1alpha1 (stored) | ratio |", "|---|---|---|---|"]
    for what, series in (
        (f"GET one request ({POOLS} pools)", outcome.get),
        (f"LIST {LISTED} requests ({POOLS} pools each)", outcome.list),
    ):
        mine, base = series["v1alpha3"], series["v1alpha1"]
        rows.append(
            f"| {what}, ops/s | {report.with_spread(mine.rate)} | {report.with_spread(base.rate)}"
            f" | {report.ratio(mine.rate.median, base.rate.median)} |"
        )
        for name, m, b in (("p50", mine.p50, base.p50), ("p99", mine.p99, base.p99)):
            rows.append(
                f"| {what}, {name} latency | {report.with_spread(m, ' ms')}"
                f" | {report.with_spread(b, ' ms')} | {report.ratio(m.median, b.median)}x |"
            )
    return "\n".join(
        [
            "## ResourcePoolStatusRequest in v1alpha3 (converted) beside v1alpha1 (stored)",
            "",
            f"Run: {date}; {generator}; {s.rounds} rounds of {s.seconds} s after {s.warmup} s"
            f" of warm-up, the two versions' rounds taken in turn; {CONNECTIONS} connections;"
            " one server, SQLite storage, watch cache on.",
            "",
            f"- {LISTED} answered requests of {POOLS} pools each, stored once in v1alpha1; the"
            " same objects read through both versions. v1alpha1 answers with the stored bytes;"
            " v1alpha3 with each object converted and re-encoded.",
            "- The objects do not change between reads, so after the first read of a revision"
            " v1alpha3 answers from the converted copy its store keeps (per object revision,"
            " 16 MiB at most); the first read after each write pays the conversion measured"
            " in-process below.",
            "- Ratio: v1alpha3 ÷ v1alpha1; for throughput the fraction kept, for latency how"
            " many times longer. Where the spreads (±) are wider than the gap, the machine's"
            " other load decided more than the version did.",
            "",
            "\n".join(rows),
            "",
            f"In-process, one request of {POOLS} pools ({CONVERSIONS:,} a round): converted"
            f" to v1alpha3 and encoded {report.with_spread(outcome.convert_us, ' µs')}, beside"
            f" its stored bytes decoded {report.with_spread(outcome.decode_us, ' µs')}"
            f" (ratio {report.ratio(outcome.convert_us.median, outcome.decode_us.median)}x).",
        ]
    )

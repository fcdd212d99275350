"""Memory of kept watch history: the server's RSS after churning objects, with the byte
bound of the event windows (``--watch-history-mib``) off and on.

Each run starts ``python -m apiserver serve`` (SQLite, watch cache on, Device view on), then
per kind creates ``OBJECTS`` objects and updates each of them twice (three revisions per
object), waits until the server has applied every write (the Device list reaches the last
resourceVersion), and reads the process's resident memory. The kinds: ResourceSlices of 4
devices (each revision also makes 4 Device events in the Device view's window) and
ResourceSlicePatches (about 1 KB each). The count bound stays at its default (10,000 events
per window) in every run, so the runs differ only in the byte bound.

``python -m bench.watchmemory`` updates only the ``watch-memory`` section of RESULTS.md;
``python -m bench watch-memory`` does the same.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apiserver.api.resource import DRA_GROUP
from apiserver.kinds.device import DeviceStrategy
from apiserver.kinds.resourceslice import ResourceSliceStrategy

from . import machine, report
from .objects import COLLECTION_PATH as PATCHES_PATH
from .objects import patch as patch_object
from .targets import APIServerTarget

SECTION = "watch-memory"
RESULTS = report.RESULTS
OBJECTS = 5_000
REVISIONS = 3
THREADS = 8
SLICE = ResourceSliceStrategy.upstream().resource
SLICES_PATH = f"/apis/{SLICE.group}/{SLICE.version}/{SLICE.plural}"
DEVICES = DeviceStrategy.for_group(DRA_GROUP).resource
DEVICES_PATH = f"/apis/{DEVICES.group}/{DEVICES.version}/{DEVICES.plural}"
BOUNDS = (0, 16, 64)
"""``--watch-history-mib`` of each run; 0 is no byte bound (the count bound only)."""


def slice_object(name: str, generation: int) -> dict[str, Any]:
    """A node's ResourceSlice of 4 GPUs; ``generation`` changes with every revision."""
    return {
        "apiVersion": SLICE.group_version,
        "kind": SLICE.kind,
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": name, "generation": generation, "resourceSliceCount": 1},
            "nodeName": name,
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {
                        "index": {"int": i},
                        "model": {"string": "a100"},
                        "driverVersion": {"version": f"1.2.{generation}"},
                        "uuid": {"string": f"GPU-{name}-{i:04d}-{generation:08d}"},
                    },
                    "capacity": {"memory": {"value": "80Gi"}, "cores": {"value": "108"}},
                }
                for i in range(4)
            ],
        },
    }


@dataclass
class Run:
    mib: int
    start_rss: int
    after: dict[str, int]
    """RSS after churning each kind, in the order churned."""
    seconds: float


@dataclass
class Outcome:
    runs: list[Run]
    objects: int


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def _churn(
    server: APIServerTarget,
    path: str,
    build: Callable[[str, int], dict[str, Any]],
    tag: str,
    objects: int,
) -> int:
    """Create ``OBJECTS`` objects and update each until it has had ``REVISIONS`` revisions;
    returns the last resourceVersion written."""

    def one(index: int) -> int:
        name = f"{tag}-{index:05d}"
        with server.client() as client:
            created = client.post(path, json=build(name, 1))
            if created.status_code != 201:
                raise RuntimeError(f"create {name}: {created.status_code} {created.text[:300]}")
            current = created.json()
            for generation in range(2, REVISIONS + 1):
                body = build(name, generation)
                for _ in range(10):  # the server may write the status meanwhile: 409, retry
                    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                    updated = client.put(f"{path}/{name}", json=body)
                    if updated.status_code != 409:
                        break
                    current = client.get(f"{path}/{name}").json()
                if updated.status_code != 200:
                    raise RuntimeError(f"update {name}: {updated.status_code}")
                current = updated.json()
            return int(current["metadata"]["resourceVersion"])

    with ThreadPoolExecutor(THREADS) as pool:
        return max(pool.map(one, range(objects)))


def _settled(server: APIServerTarget, path: str, revision: int) -> None:
    """Wait until the list at ``path`` is served at ``revision`` or later."""
    deadline = time.monotonic() + 300
    with server.client() as client:
        while time.monotonic() < deadline:
            listed = client.get(path, params={"limit": "1"})
            if listed.status_code == 200 and int(listed.json()["metadata"]["resourceVersion"]) >= (
                revision
            ):
                return
            time.sleep(0.2)
    raise RuntimeError(f"the server did not reach revision {revision}")


def _one_run(mib: int, objects: int, log: Callable[[str], None]) -> Run:
    with tempfile.TemporaryDirectory(prefix="bench-watch-memory-") as tmp:
        server = APIServerTarget("apiserver", Path(tmp), extra=["--watch-history-mib", str(mib)])
        server.start()
        try:
            pid = server.pid
            began = time.monotonic()
            start = _rss(pid)
            after: dict[str, int] = {}
            kinds: list[tuple[str, str, str, Callable[[str, int], dict[str, Any]]]] = [
                # The Device view is the last to learn of a slice write.
                ("ResourceSlice (4 devices)", SLICES_PATH, DEVICES_PATH, slice_object),
                ("ResourceSlicePatch", PATCHES_PATH, PATCHES_PATH, patch_object),
            ]
            for label, path, settle_path, build in kinds:
                last = _churn(server, path, build, label.split()[0].lower(), objects)
                _settled(server, settle_path, last)
                after[label] = _rss(pid)
                log(f"--watch-history-mib {mib}: after {label}: {after[label] / 2**20:.0f} MiB")
            return Run(mib, start, after, time.monotonic() - began)
        finally:
            server.stop()


def run(log: Callable[[str], None] = print, objects: int = OBJECTS) -> Outcome:
    return Outcome([_one_run(mib, objects, log) for mib in BOUNDS], objects)


def _mib(value: int) -> str:
    return f"{value / 2**20:,.0f}"


def render(outcome: Outcome, date: str) -> str:
    baseline = outcome.runs[0]
    kinds = list(baseline.after)
    lines = [
        "## Watch history memory: RSS after churning objects, with and without the byte bound",
        "",
        f"Run: {date}. `python -m apiserver serve` on SQLite with the watch cache and the Device"
        f" view; per kind {outcome.objects:,} objects created and updated {REVISIONS - 1} times"
        f" each ({outcome.objects * REVISIONS:,} writes, {THREADS} clients), then RSS read once the Device"
        " list had reached the last write. Kinds in order: ResourceSlices of 4 devices (each"
        " revision is also 4 Device events), then ResourceSlicePatches. The count bound is the"
        " default 10,000 events per window in every run; 0 MiB is the count bound alone.",
        "",
        "| --watch-history-mib | RSS at start (MiB) | "
        + " | ".join(f"after {k} (MiB)" for k in kinds)
        + " | growth (MiB) | growth ÷ count bound only |",
        "|---|---|" + "---|" * len(kinds) + "---|---|",
    ]
    base_growth = baseline.after[kinds[-1]] - baseline.start_rss
    for r in outcome.runs:
        growth = r.after[kinds[-1]] - r.start_rss
        lines.append(
            f"| {r.mib or '0 (no byte bound)'} | {_mib(r.start_rss)} | "
            + " | ".join(_mib(r.after[k]) for k in kinds)
            + f" | {_mib(growth)} | {report.ratio(growth, base_growth)} |"
        )
    lines.append("")
    lines.append(
        "The windows keep each event's JSON bytes without a parsed copy of the object in every"
        " run (a parsed copy costs several times the bytes, and readers used to leave one on"
        " every kept event). The byte bound counts an event's object and previous object"
        " bytes plus 400 bytes of records, per window (per kind)."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.watchmemory", description=__doc__)
    parser.add_argument("--output", type=Path, default=RESULTS, help="the RESULTS.md to update")
    parser.add_argument("--objects", type=int, default=OBJECTS, help="objects churned per kind")
    args = parser.parse_args(argv)
    outcome = run(log=lambda s: print(s, file=sys.stderr), objects=args.objects)
    report.update(args.output, {SECTION: render(outcome, machine.date())})
    return 0


if __name__ == "__main__":
    sys.exit(main())

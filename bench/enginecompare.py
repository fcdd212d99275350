"""The allocator's plain path against the previous engine, in the same run.

The plain path: scheduler_perf's shape (500 nodes x 10 node-local GPUs, one-device claims
with a CEL selector, no capacity, no counters, no constraints), filled as ``bench.allocator``
fills it (each claim checked on every node, the best node's device held, the next claim).
The previous engine is the ``apiserver`` package of ``PREVIOUS`` (the commit before
allocation semantics grew consumable capacity, counter sets in slices of their own and
list attributes), taken out of git into a scratch directory. Each engine runs in a child
process of its own (fresh interpreter, same fill), A B A B ..., and the ratio is taken pair
by pair, so a machine that drifts affects both alike.

``python -m bench.enginecompare`` updates only the ``allocator-vs-previous`` section of
RESULTS.md.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import report

SECTION = "allocator-vs-previous"
PREVIOUS = "b06f320"
"""The last commit before this round of allocation-semantics work."""
REPO = Path(__file__).resolve().parents[1]
ROUNDS = 7
CLAIMS = 1_000
"""Claims per fill: the first fifth of the cluster, where every check sees every node."""


@dataclass(frozen=True)
class Run:
    claims: int
    seconds: float
    check_p50: float

    @property
    def rate(self) -> float:
        return self.claims / self.seconds


@dataclass(frozen=True)
class Outcome:
    current: list[Run]
    previous: list[Run]
    load: tuple[float, float]


def child() -> None:
    """One fill with whichever ``apiserver`` is first on the path; JSON on stdout."""
    import gc

    from .allocator import cluster, fill

    gc.collect()
    pools = cluster()
    gc.freeze()
    done = fill(pools, CLAIMS)
    print(
        json.dumps(
            {
                "claims": done.claims,
                "seconds": done.seconds,
                "check_p50": statistics.median(done.checks),
            }
        )
    )


def _previous_tree(into: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", PREVIOUS, "apiserver"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout
    tar = into / "previous.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as opened:
        opened.extractall(into, filter="data")
    return into


def _fill(engine_root: Path) -> Run:
    env = {**os.environ, "PYTHONPATH": f"{engine_root}{os.pathsep}{REPO}"}
    out = subprocess.run(
        [sys.executable, "-m", "bench.enginecompare", "--child"],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=1800,
    ).stdout
    found: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return Run(int(found["claims"]), float(found["seconds"]), float(found["check_p50"]))


def run(log: Callable[[str], Any] = print) -> Outcome:
    load_before = os.getloadavg()[0]
    current: list[Run] = []
    previous: list[Run] = []
    with tempfile.TemporaryDirectory() as scratch:
        old = _previous_tree(Path(scratch))
        for round_ in range(ROUNDS):
            current.append(_fill(REPO))
            previous.append(_fill(old))
            log(
                f"round {round_ + 1}: {current[-1].rate:,.1f} claims/s now,"
                f" {previous[-1].rate:,.1f} before"
            )
    return Outcome(current, previous, (load_before, os.getloadavg()[0]))


def render(outcome: Outcome, date: str) -> str:
    rates = [c.rate / p.rate for c, p in zip(outcome.current, outcome.previous, strict=True)]
    checks = [
        p.check_p50 / c.check_p50 for c, p in zip(outcome.current, outcome.previous, strict=True)
    ]
    now = statistics.median(c.rate for c in outcome.current)
    before = statistics.median(p.rate for p in outcome.previous)
    check_now = statistics.median(c.check_p50 for c in outcome.current)
    check_before = statistics.median(p.check_p50 for p in outcome.previous)
    return "\n".join(
        [
            "## Allocator plain path: this engine against the previous one",
            "",
            f"Run: {date}. scheduler_perf's shape (500 nodes x 10 node-local GPUs, one-device"
            " claims with a CEL selector; no capacity, counters or constraints), the first"
            f" {CLAIMS:,} claims of a fill, each engine in a fresh process, alternated"
            f" {ROUNDS} times; ratios pair by pair (median shown). The previous engine is"
            f" commit {PREVIOUS}'s `apiserver`. Load average (1 min) before and after:"
            f" {outcome.load[0]:.1f} / {outcome.load[1]:.1f} on {os.cpu_count()} cores.",
            "",
            "| figure | this engine | previous engine | ratio (this / previous) |",
            "|---|---|---|---|",
            f"| claims per second while filling | {now:,.1f} | {before:,.1f} |"
            f" {statistics.median(rates):.2f} (rounds: {', '.join(f'{r:.2f}' for r in rates)}) |",
            f"| one claim checked on 500 nodes, p50 | {check_now * 1000:.1f} ms |"
            f" {check_before * 1000:.1f} ms | {statistics.median(checks):.2f}x as fast |",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv == ["--child"]:
        child()
        return 0
    return report.section_main("bench.enginecompare", __doc__, SECTION, run, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())

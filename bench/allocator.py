"""The allocator engine, in-process, beside the same search with symmetry reduction and caches
turned off (``Allocator(symmetry=False, caches=False, prune=False)``), in the same run.

* fill: 500 nodes of 10 node-local GPUs (scheduler_perf's driver shape), a stream of
  one-device claims with a selector; each claim is checked on every node, the best-scoring
  node's devices are held, and the next claim comes, until the cluster is full. Claims per
  second and the time of one 500-node check (p50, p99). The baseline runs the first claims
  only (it is two orders of magnitude slower) and its rate is per claim as well.
* KEP-5254: the 2x2 grid on an 8x8 mesh (every device free, and a fragmented mesh with one
  free 2x2 left), 4 contiguous out of 64 (fragmented: one window left), 12 choose 6 (no
  answer: every combination). CEL constraint evaluations and time, and whether both give
  the same answer.
* event loop: each KEP-5254 search run the way the server runs it (``Allocator.review`` on
  the loop, yielding between chunks of ``Budget.chunk`` steps) while a ticker task measures
  the loop's lag; beside it the same search called as a plain function from a coroutine.

``python -m bench.allocator`` updates only the ``allocator`` section of RESULTS.md.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from apiserver.allocator import Allocator, Budget, Claim, NodeResult, parse_claim
from apiserver.devices import unpatched_states
from apiserver.pools import Node, Pools, pools_from

from . import report

SECTION = "allocator"
DRIVER = "test-driver.cdi.k8s.io"
MLA = "mla.example.com"
NODES, PER_NODE = 500, 10
BASELINE_CLAIMS = 8
BUDGET = Budget(steps=50_000_000, evaluations=5_000_000, seconds=600.0, chunk=256)
GRID = (
    "size(devices) == 4 && devices.all(d, devices.filter(other, d != other && "
    f"((d.attributes['{MLA}'].row == other.attributes['{MLA}'].row && "
    f"(d.attributes['{MLA}'].col == other.attributes['{MLA}'].col + 1 || "
    f"d.attributes['{MLA}'].col == other.attributes['{MLA}'].col - 1)) || "
    f"(d.attributes['{MLA}'].col == other.attributes['{MLA}'].col && "
    f"(d.attributes['{MLA}'].row == other.attributes['{MLA}'].row + 1 || "
    f"d.attributes['{MLA}'].row == other.attributes['{MLA}'].row - 1)))).size() >= 2)"
)
RING = (
    f"size(devices) == 4 && devices.map(d, d.attributes['{MLA}'].deviceid).max()"
    f" - devices.map(d, d.attributes['{MLA}'].deviceid).min() == 3"
)
SUM = f"devices.map(d, d.attributes['{MLA}'].deviceid).sum() == 52"
SAME_NUMA = f"devices.all(d, d.attributes['{MLA}'].numa == devices[0].attributes['{MLA}'].numa)"


def _slice(name: str, node: str, driver: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {
            "driver": driver,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": devices,
        },
    }


def _pools(slices: list[dict[str, Any]], allocated: Sequence[str] = ()) -> Pools:
    states = [s for obj in slices for s in unpatched_states(obj)]
    claims = []
    if allocated:
        pool = slices[0]["spec"]["pool"]["name"]
        driver = slices[0]["spec"]["driver"]
        results = [{"request": "r", "driver": driver, "pool": pool, "device": d} for d in allocated]
        claims.append({"status": {"allocation": {"devices": {"results": results}}}})
    return pools_from(slices, states, claims)


# -- fill ------------------------------------------------------------------------------


def cluster() -> Pools:
    slices = []
    for n in range(NODES):
        devices = [
            {
                "name": f"instance-{i}",
                "attributes": {
                    "model": {"string": "A100"},
                    "family": {"string": "GPU"},
                    "driverVersion": {"version": "1.2.3"},
                    "dra.example.com/numa": {"int": i},
                },
                "capacity": {"memory": {"value": "1Gi"}},
            }
            for i in range(PER_NODE)
        ]
        slices.append(_slice(f"node-{n}", f"node-{n}", DRIVER, devices))
    return _pools(slices)


CLASSES = {
    "test-class": {
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}
    },
    MLA: {"spec": {"selectors": [{"cel": {"expression": f"device.driver == '{MLA}'"}}]}},
}


def one_gpu() -> Claim:
    selector = {"cel": {"expression": f"device.attributes['{DRIVER}'].model == 'A100'"}}
    request = {"deviceClassName": "test-class", "selectors": [selector]}
    return parse_claim(
        "default/gpu", {"devices": {"requests": [{"name": "r", "exactly": request}]}}
    )


@dataclass
class Fill:
    claims: int
    seconds: float
    checks: list[float]

    @property
    def rate(self) -> float:
        return self.claims / self.seconds


def fill(pools: Pools, limit: int | None, **options: Any) -> Fill:
    """Claims checked on every node and committed one after another until full (or
    ``limit`` claims)."""
    allocator = Allocator(pools, CLASSES, budget=BUDGET, **options)
    nodes = [Node(f"node-{n}") for n in range(NODES)]
    claim = one_gpu()
    checks = []
    done = 0
    began = time.perf_counter()
    while limit is None or done < limit:
        start = time.perf_counter()
        results = [allocator.allocate([claim], node) for node in nodes]
        feasible = [r for r in results if r.feasible]
        checks.append(time.perf_counter() - start)
        if not feasible:
            break
        best = max(feasible, key=lambda r: r.score)
        allocator.hold(best.devices)
        done += 1
    return Fill(done, time.perf_counter() - began, checks)


# -- KEP-5254 --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    title: str
    pools: Pools
    claim: Claim


def _mla(count: int, expression: str, name: str) -> Claim:
    request = {"deviceClassName": MLA, "count": count}
    return parse_claim(
        name,
        {
            "devices": {
                "requests": [{"name": "r", "exactly": request}],
                "constraints": [{"requests": ["r"], "cel": {"expression": expression}}],
            }
        },
    )


def cases() -> list[Case]:
    mesh = [
        {"name": f"mla-{r * 8 + c}", "attributes": {"row": {"int": r}, "col": {"int": c}}}
        for r in range(8)
        for c in range(8)
    ]
    fragmented = [
        f"mla-{r * 8 + c}"
        for r in range(8)
        for c in range(8)
        if (r + c) % 2 == 0 and not (r >= 6 and c >= 6)
    ]
    line = [{"name": f"mla-{i}", "attributes": {"deviceid": {"int": i}}} for i in range(64)]
    gaps = [f"mla-{i}" for i in range(1, 60, 4)]
    twelve = [{"name": f"mla-{i}", "attributes": {"deviceid": {"int": i}}} for i in range(12)]
    numa = [{"name": f"mla-{i}", "attributes": {"numa": {"int": i // 4}}} for i in range(32)]
    one_per_numa = [f"mla-{n * 4}" for n in range(7)]
    return [
        Case(
            "2x2 grid, 8x8 mesh, all free",
            _pools([_slice("mesh", "n1", MLA, mesh)]),
            _mla(4, GRID, "default/grid"),
        ),
        Case(
            f"2x2 grid, 8x8 mesh, {len(fragmented)} allocated (one 2x2 free)",
            _pools([_slice("mesh", "n1", MLA, mesh)], fragmented),
            _mla(4, GRID, "default/grid"),
        ),
        Case(
            f"4 contiguous of 64, {len(gaps)} allocated (one window free)",
            _pools([_slice("line", "n1", MLA, line)], gaps),
            _mla(4, RING, "default/ring"),
        ),
        Case(
            "12 choose 6, no answer",
            _pools([_slice("twelve", "n1", MLA, twelve)]),
            _mla(6, SUM, "default/six"),
        ),
        Case(
            "4 on one NUMA node (CEL), 8 NUMA nodes x 4 identical GPUs, one taken on 7 of them",
            _pools([_slice("numa", "n1", MLA, numa)], one_per_numa),
            _mla(4, SAME_NUMA, "default/numa"),
        ),
    ]


@dataclass
class Search:
    result: NodeResult
    seconds: float


@dataclass
class CaseOutcome:
    title: str
    engine: Search
    plain: Search
    same: bool
    stall_review: float
    stall_plain_call: float


def _search(case: Case, **options: Any) -> Search:
    allocator = Allocator(case.pools, CLASSES, budget=BUDGET, **options)
    began = time.perf_counter()
    result = allocator.allocate([case.claim], Node("n1"))
    return Search(result, time.perf_counter() - began)


def _answer(result: NodeResult) -> frozenset[Any]:
    return frozenset(result.devices)


async def _stall(work: Callable[[], Any]) -> float:
    """The longest gap a 1 ms ticker sees while ``work`` (a coroutine function) runs."""
    worst = 0.0
    running = True

    async def ticker() -> None:
        nonlocal worst
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            worst = max(worst, now - last - 0.001)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.005)
    await work()
    running = False
    await task
    return worst


async def _loop(case: Case) -> tuple[float, float]:
    async def reviewed() -> None:
        allocator = Allocator(case.pools, CLASSES, budget=BUDGET)
        await allocator.review([case.claim], [Node("n1")])

    async def called() -> None:
        allocator = Allocator(case.pools, CLASSES, budget=BUDGET)
        allocator.allocate([case.claim], Node("n1"))

    return await _stall(reviewed), await _stall(called)


async def _review_stalls(pools: Pools) -> tuple[float, float]:
    nodes = [Node(f"node-{n}") for n in range(NODES)]

    async def reviewed() -> None:
        await Allocator(pools, CLASSES, budget=BUDGET).review([one_gpu()], nodes)

    async def called() -> None:
        allocator = Allocator(pools, CLASSES, budget=BUDGET)
        for node in nodes:
            allocator.allocate([one_gpu()], node)

    return await _stall(reviewed), await _stall(called)


@dataclass
class Outcome:
    engine: Fill
    plain: Fill
    cases: list[CaseOutcome]
    review_stall: tuple[float, float]
    """The longest loop stall during one 500-node check on a fresh engine (its caches
    cold): through ``review``, and called as a plain function from a coroutine."""
    load: tuple[float, float]
    """The machine's 1-minute load average before and after the run (other work shares
    the cores: absolute figures move with it, ratios much less)."""


def run(log: Callable[[str], Any] = print) -> Outcome:
    load_before = os.getloadavg()[0]
    gc.collect()
    pools = cluster()
    gc.freeze()
    log("allocator: filling 500 nodes with the engine")
    engine = fill(pools, None)
    log(f"  {engine.claims} claims in {engine.seconds:.1f} s")
    plain = fill(pools, BASELINE_CLAIMS, symmetry=False, caches=False, prune=False)
    log(f"  baseline: {plain.claims} claims in {plain.seconds:.1f} s")
    review_stall = asyncio.run(_review_stalls(pools))
    outcomes = []
    for case in cases():
        log(f"allocator: {case.title}")
        mine = _search(case)
        base = _search(case, symmetry=False, caches=False, prune=False)
        stall_review, stall_call = asyncio.run(_loop(case))
        log(
            f"  {mine.result.evaluations} vs {base.result.evaluations} evaluations,"
            f" {mine.seconds:.3f} vs {base.seconds:.3f} s"
        )
        outcomes.append(
            CaseOutcome(
                case.title,
                mine,
                base,
                mine.result.feasible == base.result.feasible
                and _answer(mine.result) == _answer(base.result),
                stall_review,
                stall_call,
            )
        )
    return Outcome(engine, plain, outcomes, review_stall, (load_before, os.getloadavg()[0]))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.2f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def render(outcome: Outcome, date: str) -> str:
    e, p = outcome.engine, outcome.plain
    lines = [
        "## Allocator: fill a 500-node cluster; KEP-5254 searches; event-loop stalls",
        "",
        f"Run: {date}. In-process through the engine (`apiserver.allocator.Allocator`) over"
        " a pools snapshot; the baseline is the same search with symmetry reduction, partial-set"
        " pruning and every cache turned off, in the same run. Load average (1 min) before"
        f" and after: {outcome.load[0]:.1f} / {outcome.load[1]:.1f} on"
        f" {os.cpu_count()} cores.",
        "",
        f"Fill: {NODES} nodes x {PER_NODE} node-local GPUs, a stream of one-device claims with a"
        " CEL selector; each claim is checked on all nodes, the best-scoring node's device is"
        " held, then the next claim, until the cluster is full. The baseline ran the first"
        f" {p.claims} claims only.",
        "",
        "| figure | engine | baseline | ratio |",
        "|---|---|---|---|",
        f"| claims per second while filling ({e.claims:,} claims) | {e.rate:,.1f} |"
        f" {p.rate:,.2f} | {report.ratio(e.rate, p.rate)} |",
        f"| one claim checked on {NODES} nodes, p50 | {_ms(statistics.median(e.checks))} |"
        f" {_ms(statistics.median(p.checks))} |"
        f" {report.ratio(statistics.median(p.checks), statistics.median(e.checks))}x faster |",
        f"| same, p99 | {_ms(_pct(e.checks, 0.99))} | {_ms(_pct(p.checks, 0.99))} |"
        f" {report.ratio(_pct(p.checks, 0.99), _pct(e.checks, 0.99))}x faster |",
        f"| one node checked, p50 | {_ms(statistics.median(e.checks) / NODES)} |"
        f" {_ms(statistics.median(p.checks) / NODES)} | |",
        f"| longest loop stall during one {NODES}-node check, caches cold: `review` / plain"
        f" call | {_ms(outcome.review_stall[0])} | {_ms(outcome.review_stall[1])} |"
        f" {report.ratio(outcome.review_stall[1], max(outcome.review_stall[0], 1e-6))}x |",
        "",
        "KEP-5254 CEL constraints: CEL constraint evaluations (complete combinations"
        " evaluated) and time, engine beside baseline; the engine also checks partial sets by"
        " three-valued evaluation (`apiserver/allocator/partial.py`, in Python, so a check"
        " costs more than an evaluation in the CEL library: the time column is the honest"
        " total); `same answer` compares feasibility and the device set."
        " Event loop: the longest lag a 1 ms ticker saw while the search ran as the server runs"
        " it (`review`, yielding every"
        f" {BUDGET.chunk} steps), beside the same search called as a plain function from a"
        " coroutine.",
        "",
        "| search | evaluations (engine / baseline) | ratio | engine's partial-set checks"
        " | time (engine / baseline) | ratio | same answer | loop stall: review / plain call"
        " | ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in outcome.cases:
        lines.append(
            f"| {c.title} | {c.engine.result.evaluations:,} / {c.plain.result.evaluations:,}"
            f" | {report.ratio(c.plain.result.evaluations, max(c.engine.result.evaluations, 1))}x"
            f" fewer | {c.engine.result.partial_checks:,}"
            f" | {_ms(c.engine.seconds)} / {_ms(c.plain.seconds)}"
            f" | {report.ratio(c.plain.seconds, c.engine.seconds)}x |"
            f" {'yes' if c.same else 'NO'} | {_ms(c.stall_review)} / {_ms(c.stall_plain_call)}"
            f" | {report.ratio(c.stall_plain_call, max(c.stall_review, 1e-6))}x |"
        )
    lines += [""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return report.section_main("bench.allocator", __doc__, SECTION, run, render, argv)


if __name__ == "__main__":
    sys.exit(main())

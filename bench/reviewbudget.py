"""One search budget per AllocationReview against one budget per node, in the same run.

The case the budget was made for: 40 candidate nodes that all reach one pool of 64 distinct
devices, a claim for 4 of them under a CEL constraint no set satisfies (every node's search
would go through every combination). The baseline gives each node a budget of its own (as
the server did before: 40 nodes, 40 budgets); this server's review shares one budget over
the 40 nodes. Both use the same budget, cut to ``SECONDS`` from the server's 5 s so the
baseline ends in a minute: wall time, search steps, and the nodes searched and not
searched.

``python -m bench.reviewbudget`` updates only the ``reviewbudget`` section of RESULTS.md.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apiserver.allocator import Allocator, Budget, Claim, NodeResult, ReviewBudget, parse_claim
from apiserver.devices import unpatched_states
from apiserver.pools import Node, Pools, pools_from

from . import machine, report

SECTION = "reviewbudget"
DRIVER = "fabric.example.com"
NODES, DEVICES = 40, 64
SECONDS = 1.0
IMPOSSIBLE = f"devices.map(d, d.attributes['{DRIVER}'].id).sum() == -1"


@dataclass(frozen=True)
class Run:
    label: str
    seconds: float
    steps: int
    searched: int
    gave_up: int
    not_searched: int


def shared_pool() -> Pools:
    obj = {
        "metadata": {"name": "fabric", "uid": "fabric"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1},
            "allNodes": True,
            "devices": [
                {"name": f"dev-{i}", "attributes": {"id": {"int": i}}} for i in range(DEVICES)
            ],
        },
    }
    return pools_from([obj], unpatched_states(obj))


def claim() -> Claim:
    return parse_claim(
        "default/four",
        {
            "devices": {
                "requests": [{"name": "four", "exactly": {"deviceClassName": DRIVER, "count": 4}}],
                "constraints": [{"cel": {"expression": IMPOSSIBLE}}],
            }
        },
    )


def summary(label: str, seconds: float, results: list[NodeResult]) -> Run:
    not_searched = sum(1 for r in results if r.reasons[0].startswith("not searched"))
    gave_up = sum(1 for r in results if r.reasons[0].startswith("budget exhausted"))
    return Run(
        label,
        seconds,
        sum(r.steps for r in results),
        len(results) - not_searched,
        gave_up,
        not_searched,
    )


async def measure_async(log: Callable[[str], object]) -> list[Run]:
    budget = Budget(seconds=SECONDS)
    nodes = [Node(f"node-{i:02}") for i in range(NODES)]
    classes: dict[str, dict[str, Any]] = {DRIVER: {"spec": {}}}
    runs = []
    # Baseline: a budget per node (a fresh allocator, as each review made one).
    allocator = Allocator(shared_pool(), classes, budget=budget)
    began = time.perf_counter()
    results = []
    for node in nodes:
        results += await allocator.review([claim()], [node], ReviewBudget(budget))
    runs.append(summary("a budget per node (before)", time.perf_counter() - began, results))
    log(f"per node: {runs[-1]}")
    allocator = Allocator(shared_pool(), classes, budget=budget)
    began = time.perf_counter()
    results = await allocator.review([claim()], nodes, ReviewBudget(budget))
    runs.append(summary("one budget per review", time.perf_counter() - began, results))
    log(f"per review: {runs[-1]}")
    return runs


def measure(log: Callable[[str], object]) -> list[Run]:
    return asyncio.run(measure_async(log))


def render(runs: list[Run], date: str) -> str:
    baseline, mine = runs
    rows = [
        "| figure | one budget per review | a budget per node (before) | ratio |",
        "|---|---|---|---|",
        f"| wall time of the review | {report.number(mine.seconds)} s "
        f"| {report.number(baseline.seconds)} s | {report.ratio(mine.seconds, baseline.seconds)} |",
        f"| search steps | {mine.steps:,} | {baseline.steps:,} "
        f"| {report.ratio(mine.steps, baseline.steps)} |",
        f"| nodes searched (gave up on their budget) | {mine.searched} ({mine.gave_up}) "
        f"| {baseline.searched} ({baseline.gave_up}) | |",
        f"| nodes answered NotSearched | {mine.not_searched} | {baseline.not_searched} | |",
    ]
    return "\n".join(
        [
            "## AllocationReview budget: 40 nodes reaching one 64-device pool",
            "",
            f"Run: {date}, on {machine.cpu_model()} ({machine.cores()} cores). A claim for 4 of "
            "64 distinct devices under a CEL "
            "constraint no set satisfies, on 40 nodes that all reach the pool; the budget is "
            f"{SECONDS:g} s, 1,000,000 steps and 100,000 CEL evaluations (the server's is 5 s), "
            "per node before, per review now. In-process, one run each.",
            "",
            *rows,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    return report.section_main(__name__, __doc__, SECTION, measure, render, argv)


if __name__ == "__main__":
    raise SystemExit(main())

"""Upstream's allocator test suite (``upstream/*.yaml``) through our engine.

Each case builds the pools from its slices and already-allocated devices, asks the engine
for its claims on its node, and compares with upstream's expectation (``upstream_cases``).
A case marked ``divergence`` is a strict xfail: it fails the day it starts agreeing, so the
mark must then be removed. ``anyValid`` cases are checked by the independent checker
(``check``) instead of by device name. ``test_count_table`` prints the per-area
table of agreeing and divergent cases that the README shows.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from apiserver.allocator import Allocator, parse_claim
from apiserver.pools import Node
from tests.unit.allocator.check import held_devices, valid
from tests.unit.allocator.upstream_cases import (
    NAMESPACE,
    Case,
    allocated_claims,
    load_cases,
    runnable,
    verdict,
)
from tests.unit.builders import pools_of

CASES = load_cases()
RUN = runnable(CASES)


def _params() -> list[Any]:
    out = []
    for case in RUN:
        marks = []
        divergence = case.mark("divergence")
        if divergence is not None:
            marks.append(pytest.mark.xfail(reason=divergence, strict=True))
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


def engine_verdict(case: Case, **options: bool) -> str | None:
    """``options``: the engine's switches (``symmetry``, ``caches``)."""
    raw = case.raw
    slices = []
    for i, obj in enumerate(raw["slices"]):
        obj = {**obj, "metadata": {**obj["metadata"], "uid": f"uid-{i}"}}
        slices.append(obj)
    pools = pools_of(*slices, claims=list(allocated_claims(case)))
    classes = {c["metadata"]["name"]: c for c in raw["classes"]}
    node = Node(raw["node"]["name"], raw["node"]["labels"])
    claims = [parse_claim(f"{NAMESPACE}/{c['metadata']['name']}", c) for c in raw["claims"]]
    result = Allocator(pools, classes, **options).allocate(claims, node)
    allocations = [c.allocation for c in result.claims] if result.feasible else []
    checked = None
    if result.feasible and case.mark("anyValid") is not None:
        checked = (
            valid(pools, classes, node, claims, [a or {} for a in allocations], held_devices(pools))
            is None
        )
    return verdict(case, result.feasible, allocations, checked)


@pytest.mark.parametrize("case", _params())
def test_upstream_case(case: Case) -> None:
    problem = engine_verdict(case)
    assert problem is None, f"{case.raw['upstream']}: {problem}"
    # Without grouping of interchangeable devices and without caches: the same answer.
    plain = engine_verdict(case, symmetry=False, caches=False)
    assert plain is None, f"{case.raw['upstream']} (plain search): {plain}"


def test_every_upstream_case_is_data() -> None:
    """223 upstream cases, each once, each with its upstream line and an expectation."""
    names = [c.name for c in CASES]
    assert len(names) == 223
    assert len(set(names)) == len(names)
    for case in CASES:
        assert case.raw["upstream"].split(":")[1].isdigit(), case.name
        assert set(case.raw["expect"]) & {"results", "unschedulable", "error"}, case.name


def count_table() -> str:
    """Per area: cases, then agree / divergent through the engine (this file) and through
    AllocationReview on a real server (``tests/e2e/test_upstream_allocator_review.py``),
    cases whose upstream behaviour we deliberately do not follow, and gate-off cases."""
    rows: dict[str, Counter[str]] = {}
    for case in CASES:
        row = rows.setdefault(case.area, Counter())
        row["cases"] += 1
        if case.mark("gateOff") is not None:
            row["gate off"] += 1
            continue
        if case.mark("deliberate") is not None:
            row["deliberate"] += 1
            continue
        engine = case.mark("divergence") is None
        server = engine and case.mark("divergenceServer") is None
        row["engine agree" if engine else "engine divergent"] += 1
        row["server agree" if server else "server divergent"] += 1
    columns = [
        "cases",
        "engine agree",
        "engine divergent",
        "server agree",
        "server divergent",
        "deliberate",
        "gate off",
    ]
    lines = [
        "| area | " + " | ".join(columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    total: Counter[str] = Counter()
    for area in sorted(rows):
        total.update(rows[area])
        lines.append(f"| {area} | " + " | ".join(str(rows[area][c]) for c in columns) + " |")
    lines.append("| **all** | " + " | ".join(f"**{total[c]}**" for c in columns) + " |")
    return "\n".join(lines)


def test_count_table(capsys: pytest.CaptureFixture[str]) -> None:
    """Prints the per-area table; run with ``-s`` to see it."""
    table = count_table()
    with capsys.disabled():
        print("\n" + table)
    assert f"**{len(CASES)}**" in table.splitlines()[-1]


def test_readme_lists_each_deliberate_difference_with_its_upstream_line() -> None:
    readme = (Path(__file__).parents[3] / "README.md").read_text()
    deliberate = [c for c in CASES if c.mark("deliberate") is not None]
    assert deliberate
    for case in deliberate:
        assert case.name in readme, case.name
        assert case.raw["upstream"] in readme, case.raw["upstream"]


def test_readme_table_is_current() -> None:
    readme = (Path(__file__).parents[3] / "README.md").read_text()
    assert count_table() in readme


def test_readme_lists_each_gate_off_case() -> None:
    readme = (Path(__file__).parents[3] / "README.md").read_text()
    for case in CASES:
        if case.mark("gateOff") is not None:
            assert f"`{case.name}`" in readme, case.name

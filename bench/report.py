"""RESULTS.md: sections between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``.

A run replaces only the sections it measured and keeps every other one, so each
benchmark owns its section and later benchmarks add theirs.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from . import machine
from .stats import Figure, Series

T = TypeVar("T")
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"

HEADER = """# Benchmarks

Written by `make bench` (`python -m bench`). Each section below is replaced by the run
that measures it and kept by the others; figures are medians over timed rounds, with
the spread (half the range between the rounds, relative to the median) after ±. Compare
ratios within one section: every baseline beside a figure was measured in the same run.
"""


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"


def replace_section(document: str, name: str, body: str) -> str:
    """``document`` with section ``name`` set to ``body``, appended when it is new."""
    start, end = _markers(name)
    block = f"{start}\n{body.strip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(document):
        return pattern.sub(lambda _m: block, document, count=1)
    return document.rstrip() + "\n\n" + block + "\n"


def update(path: Path, sections: dict[str, str]) -> None:
    document = path.read_text() if path.exists() else HEADER
    for name, body in sections.items():
        document = replace_section(document, name, body)
    path.write_text(document.rstrip() + "\n")


def section_main(
    module: str,
    doc: str | None,
    section: str,
    measure: Callable[[Callable[[str], Any]], T],
    render: Callable[[T, str], str],
    argv: list[str] | None = None,
) -> int:
    """``python -m bench.<module>``: measure one section (logging to stderr) and write only
    it into RESULTS.md (or ``--output``)."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=doc)
    parser.add_argument("--output", type=Path, default=RESULTS, help="the RESULTS.md to update")
    args = parser.parse_args(argv)
    outcome = measure(lambda line: print(line, file=sys.stderr))
    update(args.output, {section: render(outcome, machine.date())})
    print(f"wrote the {section} section of {args.output}", file=sys.stderr)
    return 0


# -- formatting --------------------------------------------------------------------


def number(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def with_spread(figure: Figure, unit: str = "") -> str:
    return f"{number(figure.median)}{unit} ±{figure.spread:.0%}"


def ratio(mine: float, baseline: float) -> str:
    if baseline == 0:
        return "n/a"
    value = mine / baseline
    return f"{value:.2f}" if value < 10 else f"{value:.0f}"


def table(
    server: Series, baselines: list[Series], rate_unit: str, *, over_http: bool = False
) -> str:
    """figure | this server | baseline | ratio, for throughput and p50/p99 per baseline.

    A baseline is counted in operations per second unless it is served over HTTP (``bare``
    ones, or all with ``over_http``)."""
    rows = ["| figure | this server | baseline | ratio |", "|---|---|---|---|"]
    for baseline in baselines:
        http = over_http or baseline.label.startswith("bare")
        unit = rate_unit if http else f"{rate_unit} vs ops/s"
        rows.append(
            f"| throughput vs {baseline.label} ({unit}) "
            f"| {with_spread(server.rate)} | {with_spread(baseline.rate)} "
            f"| {ratio(server.rate.median, baseline.rate.median)} |"
        )
        for name, mine, theirs in (
            ("p50", server.p50, baseline.p50),
            ("p99", server.p99, baseline.p99),
        ):
            rows.append(
                f"| {name} latency vs {baseline.label} | {with_spread(mine, ' ms')} "
                f"| {with_spread(theirs, ' ms')} | {ratio(mine.median, theirs.median)}x |"
            )
    return "\n".join(rows)

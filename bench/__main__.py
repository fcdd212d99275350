"""``python -m bench``: run the benchmarks and update RESULTS.md beside this package's code."""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from . import (
    allocator,
    celbench,
    deviceview,
    enginecompare,
    etcdbench,
    kubeclientbench,
    load,
    machine,
    mixinsize,
    poolmetrics,
    poolstatus,
    poolview,
    profile,
    rbacbench,
    report,
    reservations,
    reviewbudget,
    scheduling,
    shim,
    suite,
    tlspeer,
    versions,
    watchmemory,
)

RESULTS = report.RESULTS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--generator",
        choices=["auto", "wrk", "python"],
        default="auto",
        help="load generator: wrk when installed (installed with apt-get when root), else Python",
    )
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per target")
    parser.add_argument("--seconds", type=int, default=3, help="length of one timed round")
    parser.add_argument("--warmup", type=int, default=2, help="warm-up seconds per target")
    parser.add_argument("--output", type=Path, default=RESULTS, help="the RESULTS.md to update")
    sections = [
        suite.SECTION,
        celbench.SECTION,
        mixinsize.SECTION,
        etcdbench.SECTION,
        deviceview.SECTION,
        poolstatus.SECTION,
        poolmetrics.SECTION,
        poolview.SECTION,
        rbacbench.SECTION,
        profile.SECTION,
        allocator.SECTION,
        enginecompare.SECTION,
        reservations.SECTION,
        reviewbudget.SECTION,
        watchmemory.SECTION,
        tlspeer.SECTION,
        shim.SECTION,
        scheduling.SECTION,
        versions.SECTION,
        kubeclientbench.SECTION,
    ]
    parser.add_argument(
        "sections",
        nargs="*",
        metavar="SECTION",
        help=f"sections to run, of {', '.join(sections)} (default: all)",
    )
    args = parser.parse_args(argv)
    if unknown := set(args.sections) - set(sections):
        parser.error(f"unknown sections {sorted(unknown)}; choose from {', '.join(sections)}")
    wanted = set(args.sections or sections)

    began = time.monotonic()
    generator = load.choose(args.generator)
    print(f"load generator: {generator.description}", file=sys.stderr)
    settings = suite.Settings(rounds=args.rounds, seconds=args.seconds, warmup=args.warmup)
    date = machine.date()
    report.update(
        args.output,
        {
            "environment": "\n".join(
                ["## Machine", "", *machine.describe(generator.description, generator.caveat)]
            )
        },
    )

    def log(line: str) -> None:
        print(line, file=sys.stderr)

    def etcd() -> str:
        outcome = etcdbench.run(
            generator, etcdbench.Settings(args.rounds, args.seconds, args.warmup)
        )
        return etcdbench.render(outcome, generator.description, date)

    def rbac() -> str:
        outcome = rbacbench.run(
            generator, rbacbench.Settings(args.rounds, args.seconds, args.warmup)
        )
        return rbacbench.render(outcome, generator.description, date)

    measures: dict[str, Callable[[], str]] = {
        suite.SECTION: lambda: suite.render(
            suite.run(generator, settings), generator.description, date
        ),
        celbench.SECTION: lambda: celbench.render(celbench.run(log=log), date),
        mixinsize.SECTION: lambda: mixinsize.render(mixinsize.run(log=log), date),
        etcdbench.SECTION: etcd,
        deviceview.SECTION: lambda: deviceview.render(deviceview.run(log=log), date),
        poolstatus.SECTION: lambda: poolstatus.render(poolstatus.run(log=log), date),
        poolmetrics.SECTION: lambda: poolmetrics.render(poolmetrics.run(log=log), date),
        poolview.SECTION: lambda: poolview.render(poolview.run(log=log), date),
        rbacbench.SECTION: rbac,
        profile.SECTION: lambda: profile.render(profile.run(generator, log=log), date),
        allocator.SECTION: lambda: allocator.render(allocator.run(log=log), date),
        enginecompare.SECTION: lambda: enginecompare.render(enginecompare.run(log=log), date),
        reservations.SECTION: lambda: reservations.render(reservations.run(log=log), date),
        reviewbudget.SECTION: lambda: reviewbudget.render(reviewbudget.measure(log), date),
        watchmemory.SECTION: lambda: watchmemory.render(watchmemory.run(log=log), date),
        tlspeer.SECTION: lambda: tlspeer.render(
            tlspeer.run(generator, settings), generator.description, date
        ),
        shim.SECTION: lambda: shim.render(shim.run(log=log), date),
        scheduling.SECTION: lambda: scheduling.render(scheduling.run(log=log), date),
        versions.SECTION: lambda: versions.render(
            versions.run(generator, versions.Settings(args.rounds, args.seconds, args.warmup)),
            generator.description,
            date,
        ),
        kubeclientbench.SECTION: lambda: kubeclientbench.render(kubeclientbench.run(log), date),
    }
    crashed = []
    for section in sections:
        if section not in wanted:
            continue
        # Written as soon as measured, so a section that crashes costs only itself.
        try:
            report.update(args.output, {section: measures[section]()})
        except Exception:
            traceback.print_exc()
            crashed.append(section)
    print(f"wrote {args.output} in {time.monotonic() - began:.0f} s", file=sys.stderr)
    if crashed:
        print(f"crashed, not written: {', '.join(crashed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

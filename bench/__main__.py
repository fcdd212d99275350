"""``python -m bench``: run the benchmarks and update RESULTS.md beside this package's code."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from . import (
    allocator,
    celbench,
    deviceview,
    etcdbench,
    load,
    machine,
    mixinsize,
    poolstatus,
    poolview,
    profile,
    rbacbench,
    report,
    reservations,
    shim,
    suite,
    tlspeer,
    watchmemory,
)

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


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
        poolview.SECTION,
        rbacbench.SECTION,
        profile.SECTION,
        allocator.SECTION,
        reservations.SECTION,
        watchmemory.SECTION,
        tlspeer.SECTION,
        shim.SECTION,
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
    results = {
        "environment": "\n".join(
            ["## Machine", "", *machine.describe(generator.description, generator.caveat)]
        ),
    }
    if suite.SECTION in wanted:
        outcome = suite.run(generator, settings)
        results[suite.SECTION] = suite.render(outcome, generator.description, date)
    if celbench.SECTION in wanted:
        cel_outcome = celbench.run(log=lambda s: print(s, file=sys.stderr))
        results[celbench.SECTION] = celbench.render(cel_outcome, date)
    if mixinsize.SECTION in wanted:
        mixins_outcome = mixinsize.run(log=lambda s: print(s, file=sys.stderr))
        results[mixinsize.SECTION] = mixinsize.render(mixins_outcome, date)
    if etcdbench.SECTION in wanted:
        etcd_settings = etcdbench.Settings(args.rounds, args.seconds, args.warmup)
        etcd_outcome = etcdbench.run(generator, etcd_settings)
        results[etcdbench.SECTION] = etcdbench.render(etcd_outcome, generator.description, date)
    if deviceview.SECTION in wanted:
        view_outcome = deviceview.run(log=lambda s: print(s, file=sys.stderr))
        results[deviceview.SECTION] = deviceview.render(view_outcome, date)
    if poolstatus.SECTION in wanted:
        pool_outcome = poolstatus.run(log=lambda s: print(s, file=sys.stderr))
        results[poolstatus.SECTION] = poolstatus.render(pool_outcome, date)
    if poolview.SECTION in wanted:
        view_cost = poolview.run(log=lambda s: print(s, file=sys.stderr))
        results[poolview.SECTION] = poolview.render(view_cost, date)
    if rbacbench.SECTION in wanted:
        rbac_settings = rbacbench.Settings(args.rounds, args.seconds, args.warmup)
        rbac_outcome = rbacbench.run(generator, rbac_settings)
        results[rbacbench.SECTION] = rbacbench.render(rbac_outcome, generator.description, date)
    if profile.SECTION in wanted:
        profiles = profile.run(generator, log=lambda s: print(s, file=sys.stderr))
        results[profile.SECTION] = profile.render(profiles, date)
    if allocator.SECTION in wanted:
        allocator_outcome = allocator.run(log=lambda s: print(s, file=sys.stderr))
        results[allocator.SECTION] = allocator.render(allocator_outcome, date)
    if reservations.SECTION in wanted:
        reservation_outcome = reservations.run(log=lambda s: print(s, file=sys.stderr))
        results[reservations.SECTION] = reservations.render(reservation_outcome, date)
    if watchmemory.SECTION in wanted:
        memory_outcome = watchmemory.run(log=lambda s: print(s, file=sys.stderr))
        results[watchmemory.SECTION] = watchmemory.render(memory_outcome, date)
    if tlspeer.SECTION in wanted:
        tls_outcome = tlspeer.run(generator, settings)
        results[tlspeer.SECTION] = tlspeer.render(tls_outcome, generator.description, date)
    if shim.SECTION in wanted:
        shim_outcome = shim.run(log=lambda s: print(s, file=sys.stderr))
        results[shim.SECTION] = shim.render(shim_outcome, date)
    report.update(args.output, results)
    print(f"wrote {args.output} in {time.monotonic() - began:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The device view at scale: 5,000 slices of 8 devices (40,000 devices) and 50 patches.

Measured in-process over in-memory sources (what the server's informers hold), with the
Device resource's store attached as a listener, as in the server:

* the full build (flatten every slice, evaluate every patch, merge, publish), in rounds;
* absorbing one slice update (one device's attribute changed), and one patch change —
  attributes of a pool patch (its devices merged again) and the selector of a fleet-wide
  CEL patch (re-evaluated over all 40,000 devices) — each as a ratio to the full build of
  the same run;
* the longest stretch the build held the event loop (a 1 ms ticker measures the gaps; the
  view yields every 10 ms), and memory (tracemalloc: the sources' objects, then what the
  view and the Device store add).

``python -m bench.deviceview`` updates only the ``device-view`` section of RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import functools
import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apiserver.api.resource import DRA_GROUP, flatten_slice
from apiserver.cel import device_value
from apiserver.devices import Commit, DeviceStore, DeviceView
from apiserver.kinds.device import DeviceStrategy
from apiserver.sources import MemorySource, RevisionClock

from . import machine, report

SECTION = "device-view"
RESULTS = report.RESULTS
DRIVER = "gpu.example.com"
SLICES = 5_000
PER_SLICE = 8
MODELS = ("a100", "h100", "b200")
CREATED = "2026-01-01T00:00:00Z"


def _slice(i: int) -> dict[str, Any]:
    """Node ``i`` with 8 GPUs of one model; the model's attributes come from a mixin."""
    model = MODELS[i % len(MODELS)]
    memory = {"a100": "80Gi", "h100": "80Gi", "b200": "192Gi"}[model]
    node = f"node-{i:05d}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu", "uid": f"uid-{i}", "creationTimestamp": CREATED},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "mixins": {
                "device": [
                    {
                        "name": model,
                        "attributes": {
                            "model": {"string": model},
                            "productName": {"string": f"NVIDIA {model.upper()}"},
                            "driverVersion": {"version": "550.54.15"},
                            "cudaComputeCapability": {"version": "9.0.0"},
                        },
                        "capacity": {"memory": {"value": memory}},
                    }
                ]
            },
            "devices": [
                {
                    "name": f"gpu-{d}",
                    "includes": [model],
                    "attributes": {
                        "index": {"int": d},
                        "uuid": {"string": f"GPU-{i:05d}-{d}"},
                        "numa": {"int": d // 4},
                        "example.com/rack": {"string": f"rack-{i // 40}"},
                    },
                }
                for d in range(PER_SLICE)
            ],
        },
    }


def _patch(name: str, priority: int, flt: dict[str, Any], **devices: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourceSlicePatch",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "generation": 1,
            "creationTimestamp": CREATED,
        },
        "spec": {"devices": {"priority": priority, "filter": flt, **devices}},
    }


def _class(name: str, expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


FLEET_SELECTORS = (
    f'device.attributes["{DRIVER}"].model == "a100"',
    f'device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("550.0.0"))',
    f'device.capacity["{DRIVER}"].memory.compareTo(quantity("100Gi")) > 0',
    f'device.attributes["{DRIVER}"].numa == 1 && device.attributes["{DRIVER}"].index > 5',
    'device.attributes["example.com"].rack.startsWith("rack-1")',
)


def _patches() -> list[dict[str, Any]]:
    """30 pool patches, 10 device patches, 5 fleet-wide CEL patches, 5 class patches."""
    out = []
    for p in range(30):
        node = f"node-{p * 160:05d}"
        out.append(
            _patch(
                f"pool-{p}",
                p % 3,
                {"driver": DRIVER, "pool": node},
                attributes={f"{DRIVER}/maintenance": {"bool": True}},
            )
        )
    for p in range(10):
        node = f"node-{p * 450 + 7:05d}"
        out.append(
            _patch(
                f"device-{p}",
                5,
                {"driver": DRIVER, "pool": node, "device": f"gpu-{p % PER_SLICE}"},
                attributes={f"{DRIVER}/quarantined": {"bool": True}},
                capacity={f"{DRIVER}/memory": {"value": "0"}},
            )
        )
    for p, expression in enumerate(FLEET_SELECTORS):
        out.append(
            _patch(
                f"fleet-{p}",
                1,
                {"driver": DRIVER, "selectors": [{"cel": {"expression": expression}}]},
                attributes={f"example.com/tier-{p}": {"string": "premium"}},
            )
        )
    for p in range(5):
        out.append(
            _patch(
                f"class-{p}",
                2,
                {"deviceClassName": ("a100s", "big-memory")[p % 2]},
                attributes={f"example.com/class-{p}": {"bool": True}},
            )
        )
    return out


CLASSES = [
    _class("a100s", f'device.attributes["{DRIVER}"].model == "a100"'),
    _class("big-memory", f'device.capacity["{DRIVER}"].memory.compareTo(quantity("100Gi")) > 0'),
]


@dataclass
class World:
    slices: MemorySource
    classes: MemorySource
    patches: MemorySource
    view: DeviceView
    store: DeviceStore


def _sources(slices: list[dict[str, Any]]) -> tuple[MemorySource, MemorySource, MemorySource]:
    clock = RevisionClock()
    return (
        MemorySource("resourceslices", slices, clock=clock),
        MemorySource("deviceclasses", CLASSES, clock=clock),
        MemorySource("resourceslicepatches", _patches(), clock=clock),
    )


async def _build(
    slices: list[dict[str, Any]], *, pause_gc: bool = True
) -> tuple[World, float, float]:
    """A synced world; the build's seconds and the longest event-loop gap seen meanwhile."""
    sources = _sources(slices)
    view = DeviceView(*sources, pause_gc=pause_gc)
    store = DeviceStore(DeviceStrategy.for_group(DRA_GROUP).resource)
    view.subscribe(store)
    for source in sources:
        await source.start()
    done = asyncio.Event()
    worst = 0.0

    async def ticker() -> None:
        nonlocal worst
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)  # the probe: how late a 1 ms timer fires is the gap
            now = time.perf_counter()
            worst = max(worst, now - last - 0.001)
            last = now

    ticking = asyncio.create_task(ticker())
    began = time.perf_counter()
    await view.start()
    await view.wait_idle()
    seconds = time.perf_counter() - began
    done.set()
    await ticking
    return World(*sources, view, store), seconds, worst


async def _close(world: World) -> None:
    await world.view.close()
    for source in (world.slices, world.classes, world.patches):
        await source.close()


async def _timed(change: Callable[[], Any], world: World) -> float:
    began = time.perf_counter()
    change()
    await world.view.wait_idle()
    return time.perf_counter() - began


class _CommitSizes:
    """A listener that records how many devices each commit changed."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def reset(self, states: Any, revision: int) -> None:
        self.sizes.clear()

    def apply(self, commit: Commit) -> None:
        self.sizes.append(len(commit.changes))


@dataclass
class Outcome:
    devices: int
    patches: int
    builds: list[float]
    loop_gaps: list[float]
    pacer_longest: float
    slice_updates: list[float]
    patch_attribute_changes: list[float]
    patch_selector_changes: list[float]
    matched: dict[str, int]
    sources_bytes: int
    view_bytes: int
    cel_bytes: int
    unpaused_build: float
    unpaused_gap: float
    selector_changed: float


async def _run(rounds: int, log: Callable[[str], Any]) -> Outcome:
    slices = [_slice(i) for i in range(SLICES)]
    builds, gaps = [], []
    world: World | None = None
    for r in range(rounds):
        if world is not None:
            await _close(world)
        gc.collect()
        world, seconds, gap = await _build(slices)
        builds.append(seconds)
        gaps.append(gap)
        log(f"  build {r + 1}/{rounds}: {seconds:.2f} s, longest loop gap {gap * 1000:.1f} ms")
    assert world is not None
    devices = len(world.view.devices())
    if devices != SLICES * PER_SLICE:
        raise RuntimeError(f"expected {SLICES * PER_SLICE} devices, got {devices}")
    pacer_longest = world.view.pacer.longest

    matched = {}
    for name in ("pool-0", "device-0", "fleet-0", "class-0"):
        patch_report = world.view.patch_report(name)
        matched[name] = patch_report.matched if patch_report is not None else 0

    slice_updates = []
    for n in range(200):
        changed = copy.deepcopy(world.slices.get(f"node-{n * 25:05d}-gpu"))
        assert changed is not None
        changed["spec"]["devices"][n % PER_SLICE]["attributes"]["numa"] = {"int": 7}
        slice_updates.append(await _timed(functools.partial(world.slices.put, changed), world))

    attribute_changes = []
    for n in range(50):
        changed = copy.deepcopy(world.patches.get(f"pool-{n % 30}"))
        assert changed is not None
        changed["spec"]["devices"]["attributes"][f"{DRIVER}/epoch"] = {"int": n + 1}
        attribute_changes.append(await _timed(functools.partial(world.patches.put, changed), world))

    sizes = _CommitSizes()
    world.view.subscribe(sizes)
    selector_changes = []
    for n in range(5):
        changed = copy.deepcopy(world.patches.get("fleet-0"))
        assert changed is not None
        model = MODELS[(n + 1) % len(MODELS)]
        changed["spec"]["devices"]["filter"]["selectors"] = [
            {"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}
        ]
        selector_changes.append(await _timed(functools.partial(world.patches.put, changed), world))
    selector_changed = statistics.median(sizes.sizes)
    log("  incremental changes measured")
    await _close(world)
    gc.unfreeze()
    gc.collect()
    unpaused, unpaused_seconds, unpaused_gap = await _build(slices, pause_gc=False)
    log(
        f"  build with the collector running: {unpaused_seconds:.2f} s, gap {unpaused_gap * 1000:.0f} ms"
    )
    await _close(unpaused)
    gc.collect()

    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = [_slice(i) for i in range(SLICES)]
    sources = _sources(kept)
    for source in sources:
        await source.start()
    with_sources = tracemalloc.get_traced_memory()[0]
    view = DeviceView(*sources)
    store = DeviceStore(DeviceStrategy.for_group(DRA_GROUP).resource)
    view.subscribe(store)
    await view.start()
    await view.wait_idle()
    gc.collect()
    with_view = tracemalloc.get_traced_memory()[0]
    # The CEL share: each device converted once more, on its own.
    flattened = [d for obj in kept for d in flatten_slice(obj["spec"])["devices"]]
    before_values = tracemalloc.get_traced_memory()[0]
    values = [device_value(DRIVER, d) for d in flattened]
    cel_bytes = tracemalloc.get_traced_memory()[0] - before_values
    del values, flattened
    tracemalloc.stop()
    log("  memory measured")
    await view.close()
    return Outcome(
        devices=devices,
        patches=len(_patches()),
        builds=builds,
        loop_gaps=gaps,
        pacer_longest=pacer_longest,
        slice_updates=slice_updates,
        patch_attribute_changes=attribute_changes,
        patch_selector_changes=selector_changes,
        matched=matched,
        sources_bytes=with_sources - base,
        view_bytes=with_view - with_sources,
        cel_bytes=cel_bytes,
        unpaused_build=unpaused_seconds,
        unpaused_gap=unpaused_gap,
        selector_changed=selector_changed,
    )


def run(rounds: int = 3, log: Callable[[str], Any] = print) -> Outcome:
    return asyncio.run(_run(rounds, log))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.2f} ms" if seconds < 0.1 else f"{seconds * 1000:,.0f} ms"


def render(outcome: Outcome, date: str) -> str:
    build = statistics.median(outcome.builds)
    spread = (max(outcome.builds) - min(outcome.builds)) / 2 / build if build else 0.0
    rows = [
        ("one slice update (one of its 8 devices changed)", outcome.slice_updates),
        (
            "one patch change: attributes of a pool patch (its 8 devices merged again)",
            outcome.patch_attribute_changes,
        ),
        (
            "one patch change: selector of a fleet-wide CEL patch (40,000 devices evaluated,"
            f" {outcome.selector_changed:,.0f} changed)",
            outcome.patch_selector_changes,
        ),
    ]
    lines = [
        "## Device view: 5,000 slices x 8 devices with 50 patches",
        "",
        f"Run: {date}. In-process, over in-memory sources holding {SLICES:,} ResourceSlices of"
        f" {PER_SLICE} GPUs (model attributes from a KEP-5234 mixin) — {outcome.devices:,}"
        f" devices — and {outcome.patches} ResourceSlicePatches: 30 for one pool each, 10 for"
        " one device each, 5 fleet-wide with a CEL selector (model, version, quantity,"
        " attribute arithmetic, string) and 5 naming one of 2 DeviceClasses (CEL). The Device"
        " resource's store listens, as in the server. Matches: "
        + ", ".join(f"{k} {v:,}" for k, v in outcome.matched.items())
        + ".",
        "",
        "| figure | time | ratio to the full build |",
        "|---|---|---|",
        f"| full build (median of {len(outcome.builds)}) | {build:.2f} s ±{spread:.0%} | 1 |",
    ]
    for label, values in rows:
        median = statistics.median(values)
        lines.append(
            f"| {label}, median of {len(values)} | {_ms(median)} | {median / build:.1e}"
            f" (1/{build / median:,.0f}) |"
        )
    lines += [
        "",
        f"Longest stretch the build held the event loop: {max(outcome.loop_gaps) * 1000:.1f} ms"
        f" (a 1 ms ticker's worst gap over the builds; the view's own pacer recorded"
        f" {outcome.pacer_longest * 1000:.1f} ms). The view yields whenever 10 ms of work have"
        " passed, and builds with the cyclic garbage collector paused, then frozen (as the"
        " server runs it): with the collector running, the same build took"
        f" {outcome.unpaused_build:.2f} s and its full collections held the loop for up to"
        f" {outcome.unpaused_gap * 1000:,.0f} ms.",
        "",
        f"Memory (tracemalloc): the source objects (the slices as parsed JSON, the patches and"
        f" classes) take {outcome.sources_bytes / 2**20:,.0f} MiB; the view adds"
        f" {outcome.view_bytes / 2**20:,.0f} MiB ({outcome.view_bytes / outcome.devices:,.0f}"
        " bytes per device), of which the CEL values (each device converted once, kept for"
        f" the next patch or class to evaluate) are {outcome.cel_bytes / 2**20:,.0f} MiB; the"
        " rest is the flattened devices (new dicts where a mixin is included), the merged"
        " devices of patched ones, indexes, matches and published states. Unpatched devices"
        " share their dicts with the flattened slice, and Device objects are built when read,"
        " so the Device resource adds no copy.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.deviceview", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="full builds to time")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    outcome = run(args.rounds, log=lambda s: print(s, file=sys.stderr))
    report.update(args.output, {SECTION: render(outcome, machine.date())})
    print(f"wrote the {SECTION} section of {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

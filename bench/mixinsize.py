"""KEP-5234 size check: one 128-device pool written with mixins and written out in full,
both stored through the real server, bytes side by side.

The pool is a node with 8 partitionable GPUs, 16 partitions each (one whole GPU and MIG-like
slices of five profiles): every partition has the GPU model's attributes, its GPU's
attributes, its profile's attributes and capacities, and a few of its own, and consumes
counters of its GPU's counter set (profile counters plus the memory slices of its
placement). Written with mixins, the shared parts are one model mixin, one mixin per GPU
and one per profile, one counter set mixin and one counter consumption mixin per profile.
Both forms must flatten to the same slice before anything is measured.

``python -m bench.mixinsize`` updates only the ``mixins-size`` section of RESULTS.md;
``make bench`` runs it as part of ``python -m bench``.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

import orjson

from apiserver.api.resource import flatten_slice
from apiserver.kinds.resourceslice import ResourceSliceStrategy
from apiserver.storage.sqlite import SQLiteStore

from . import report
from .targets import APIServerTarget

SECTION = "mixins-size"
RESOURCE = ResourceSliceStrategy.upstream().resource
COLLECTION_PATH = f"/apis/{RESOURCE.group}/{RESOURCE.version}/{RESOURCE.plural}"

DRIVER = "gpu.example.com"
GPUS = 8
MEMORY_SLICES = 8
# profile -> (partitions per GPU, memory slices, multiprocessors, copy engines, decoders,
# encoders, jpeg engines, ofa engines, memory)
PROFILES: dict[str, tuple[int, int, int, int, int, int, int, int, str]] = {
    "7g-80gb": (1, 8, 98, 7, 5, 1, 1, 1, "80Gi"),
    "3g-40gb": (2, 4, 42, 3, 2, 0, 0, 0, "40Gi"),
    "2g-20gb": (3, 2, 28, 2, 1, 0, 0, 0, "20Gi"),
    "1g-20gb": (3, 2, 14, 1, 1, 0, 0, 0, "20Gi"),
    "1g-10gb": (7, 1, 14, 1, 0, 0, 0, 0, "10Gi"),
}
ENGINES = ("multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines")
COUNTERS = {name: "".join("-" + c.lower() if c.isupper() else c for c in name) for name in ENGINES}
"""Counter names are DNS labels: ``copyEngines`` is counted as ``copy-engines``."""


def _model_attributes() -> dict[str, Any]:
    return {
        "productName": {"string": "Example GPU A100-SXM4-80GB"},
        "brand": {"string": "Example"},
        "architecture": {"string": "Ampere"},
        "cudaComputeCapability": {"version": "8.0.0"},
        "driverVersion": {"version": "550.54.15"},
        "cudaDriverVersion": {"version": "12.4.0"},
    }


def _gpu_attributes(gpu: int) -> dict[str, Any]:
    return {
        "parentUUID": {"string": f"GPU-{gpu:08x}-4b2a-9c3e-7d1f-{gpu:012x}"},
        "pcieBusID": {"string": f"0000:{0x10 + gpu * 0x10:02x}:00.0"},
        "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{gpu // 4:02x}"},
        "parentIndex": {"int": gpu},
    }


def _profile_parts(profile: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The attributes, capacities and consumed counters every partition of a profile has."""
    _, _, *engines, memory = PROFILES[profile]
    attributes = {"profile": {"string": profile}, "type": {"string": "mig"}}
    capacity: dict[str, Any] = {"memory": {"value": memory}}
    consumed: dict[str, Any] = {"memory": {"value": memory}}
    for name, amount in zip(ENGINES, engines, strict=True):
        capacity[name] = {"value": str(amount)}
        if amount:
            consumed[COUNTERS[name]] = {"value": str(amount)}
    return attributes, capacity, consumed


def _counter_set_counters() -> dict[str, Any]:
    counters: dict[str, Any] = {"memory": {"value": "80Gi"}}
    _, _, *engines, _ = PROFILES["7g-80gb"]
    for name, amount in zip(ENGINES, engines, strict=True):
        counters[COUNTERS[name]] = {"value": str(amount)}
    for i in range(MEMORY_SLICES):
        counters[f"memory-slice-{i}"] = {"value": "1"}
    return counters


def _partitions() -> list[tuple[str, int, int]]:
    """(profile, placement start, placement size) of the 16 partitions of one GPU."""
    out = []
    for profile, (count, slices, *_rest) in PROFILES.items():
        for i in range(count):
            out.append((profile, (i * slices) % MEMORY_SLICES, slices))
    return out


def _own_parts(
    gpu: int, index: int, start: int, size: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """What only this partition has: its attributes and the memory slices it consumes."""
    attributes = {
        "uuid": {"string": f"MIG-{gpu:04x}{index:04x}-5e6f-7a8b-9c0d-{gpu * 16 + index:012x}"},
        "index": {"int": index},
        "placementStart": {"int": start},
    }
    slices = {f"memory-slice-{s}": {"value": "1"} for s in range(start, start + size)}
    return attributes, slices


def _spec(devices: list[dict[str, Any]], shared: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "driver": DRIVER,
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "nodeName": "node-1",
        "sharedCounters": shared,
        "devices": devices,
    }


def with_mixins() -> dict[str, Any]:
    """The pool written with mixins."""
    devices = []
    for gpu in range(GPUS):
        for index, (profile, start, size) in enumerate(_partitions()):
            attributes, slices = _own_parts(gpu, index, start, size)
            devices.append(
                {
                    "name": f"gpu-{gpu}-mig-{index}",
                    "includes": ["model", f"gpu-{gpu}", profile],
                    "attributes": attributes,
                    "consumesCounters": [
                        {"counterSet": f"gpu-{gpu}", "includes": [profile], "counters": slices}
                    ],
                }
            )
    device_mixins: list[dict[str, Any]] = [{"name": "model", "attributes": _model_attributes()}]
    device_mixins += [
        {"name": f"gpu-{gpu}", "attributes": _gpu_attributes(gpu)} for gpu in range(GPUS)
    ]
    consumption_mixins = []
    for profile in PROFILES:
        attributes, capacity, consumed = _profile_parts(profile)
        device_mixins.append({"name": profile, "attributes": attributes, "capacity": capacity})
        consumption_mixins.append({"name": profile, "counters": consumed})
    shared = [{"name": f"gpu-{gpu}", "includes": ["gpu"]} for gpu in range(GPUS)]
    spec = _spec(devices, shared)
    spec["mixins"] = {
        "device": device_mixins,
        "counterSet": [{"name": "gpu", "counters": _counter_set_counters()}],
        "deviceCounterConsumption": consumption_mixins,
    }
    return spec


def expanded() -> dict[str, Any]:
    """The same pool written out in full, without mixins."""
    devices: list[dict[str, Any]] = []
    for gpu in range(GPUS):
        for index, (profile, start, size) in enumerate(_partitions()):
            own, slices = _own_parts(gpu, index, start, size)
            attributes, capacity, consumed = _profile_parts(profile)
            devices.append(
                {
                    "name": f"gpu-{gpu}-mig-{index}",
                    "attributes": {
                        **_model_attributes(),
                        **_gpu_attributes(gpu),
                        **attributes,
                        **own,
                    },
                    "capacity": capacity,
                    "consumesCounters": [
                        {"counterSet": f"gpu-{gpu}", "counters": {**consumed, **slices}}
                    ],
                }
            )
    shared = [{"name": f"gpu-{gpu}", "counters": _counter_set_counters()} for gpu in range(GPUS)]
    return _spec(devices, shared)


def _object(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE.group_version,
        "kind": RESOURCE.kind,
        "metadata": {"name": name},
        "spec": spec,
    }


@dataclass
class Form:
    label: str
    body_bytes: int
    stored_bytes: int
    devices: int


@dataclass
class Outcome:
    forms: list[Form]
    flatten_us: float
    flattened_bytes: int


async def _stored_sizes(db: Path, names: list[str]) -> list[int]:
    store = SQLiteStore(db)
    await store.start()
    try:
        sizes = []
        for name in names:
            found = await store.get(RESOURCE.key(None, name))
            if found is None:
                raise RuntimeError(f"{name} was not stored")
            sizes.append(len(found.raw))
        return sizes
    finally:
        await store.close()


def _flatten_time(spec: dict[str, Any], rounds: int = 5, calls: int = 200) -> float:
    """Median microseconds per ``flatten_slice`` call over ``rounds`` rounds."""
    per_call = []
    for _ in range(rounds):
        began = time.perf_counter()
        for _ in range(calls):
            flatten_slice(spec)
        per_call.append((time.perf_counter() - began) / calls * 1e6)
    return median(per_call)


def run(log: Any = print) -> Outcome:
    mixed, full = with_mixins(), expanded()
    if flatten_slice(mixed) != full or flatten_slice(full) != full:
        raise RuntimeError("the two forms do not describe the same pool")
    bodies = {
        "with mixins": orjson.dumps(_object("pool-with-mixins", mixed)),
        "expanded": orjson.dumps(_object("pool-expanded", full)),
    }
    with tempfile.TemporaryDirectory(prefix="bench-mixins-") as tmp:
        workdir = Path(tmp)
        server = APIServerTarget("apiserver", workdir)
        try:
            server.start()
            with server.client() as client:
                for label, body in bodies.items():
                    response = client.post(COLLECTION_PATH, content=body)
                    if response.status_code != 201:
                        raise RuntimeError(f"{label}: {response.status_code} {response.text}")
                    log(f"  stored the pool {label}")
        finally:
            server.stop()
        names = ["pool-with-mixins", "pool-expanded"]
        sizes = asyncio.run(_stored_sizes(workdir / "data" / "apiserver.db", names))
    forms = [
        Form(label, len(body), size, len(spec["devices"]))
        for (label, body), size, spec in zip(bodies.items(), sizes, (mixed, full), strict=True)
    ]
    return Outcome(forms, _flatten_time(mixed), len(orjson.dumps(flatten_slice(mixed))))


def render(outcome: Outcome, date: str) -> str:
    mixed, full = outcome.forms
    lines = [
        "## KEP-5234 mixins: the same 128-device pool with mixins and expanded, bytes stored",
        "",
        f"Run: {date}. A node with {GPUS} partitionable GPUs of {len(_partitions())} partitions"
        " each (five profiles): per device the GPU model's, its GPU's and its profile's"
        " attributes and capacities, three attributes of its own, and counters consumed from"
        " its GPU's counter set. With mixins, the shared parts are one model mixin, one"
        " mixin per GPU, one device and one counter consumption mixin per profile and one"
        " counter set mixin. Both forms flatten to the same slice (checked before storing);"
        " both are created through `python -m apiserver serve` over HTTPS and the stored"
        " object (with the server's metadata and managedFields) is read back from SQLite.",
        "",
        "| form | devices | request body (bytes) | stored (bytes) |",
        "|---|---|---|---|",
    ]
    for form in outcome.forms:
        lines.append(
            f"| {form.label} | {form.devices} | {form.body_bytes:,} | {form.stored_bytes:,} |"
        )
    lines += [
        f"| ratio (with mixins ÷ expanded) | | {report.ratio(mixed.body_bytes, full.body_bytes)}"
        f" | {report.ratio(mixed.stored_bytes, full.stored_bytes)} |",
        "",
        f"The slice with mixins is stored in {mixed.stored_bytes / full.stored_bytes:.0%} of"
        f" the bytes of the expanded one ({full.stored_bytes / mixed.stored_bytes:.1f}x"
        f" smaller). Flattening it back (`flatten_slice`, {outcome.flattened_bytes:,} bytes of"
        f" JSON out) takes ≈{outcome.flatten_us:,.0f} µs in-process (median of 5 rounds of"
        " 200 calls).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return report.section_main("bench.mixinsize", __doc__, SECTION, run, render, argv)


if __name__ == "__main__":
    sys.exit(main())

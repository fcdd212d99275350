"""Caches that outlive one review (``allocator.shared``): over random sequences of held
devices, claims, nodes, class changes and device changes, an allocator reading shared
caches answers exactly as one built from scratch (feasibility, score, allocations, reasons),
and the caches are kept while devices and classes stay and dropped when either changes."""

from __future__ import annotations

import random
from typing import Any

import pytest

from apiserver.allocator import Allocator, SharedCaches, parse_claim
from apiserver.allocator.claims import Claim
from apiserver.api.resource import DeviceID
from apiserver.pools import Node, Pools, PoolState
from tests.unit.allocator.check import answer
from tests.unit.builders import pools_of, slice_obj

DRIVER = "dra.example.com"
NODES = [Node(f"n{i}", {"zone": "a" if i % 2 else "b"}) for i in range(4)]


def _slices(rng: random.Random, version: int) -> list[dict[str, Any]]:
    out = []
    for node in NODES:
        devices = [
            {
                "name": f"d{i}",
                "attributes": {
                    "model": {"string": rng.choice(["a", "b"])},
                    "mem": {"int": rng.choice([8, 16, 32])},
                },
            }
            for i in range(6)
        ]
        out.append((node.name, {"nodeName": node.name}, devices))
    fabric = [
        {"name": f"f{i}", "attributes": {"model": {"string": "a"}, "mem": {"int": 64}}}
        for i in range(3)
    ]
    out.append(("fabric", {"allNodes": True}, fabric))
    return [
        slice_obj(
            f"{pool}-v{version}", devices, driver=DRIVER, pool=pool, generation=version, **where
        )
        for pool, where, devices in out
    ]


def _base(rng: random.Random, version: int) -> Pools:
    return pools_of(*_slices(rng, version))


def _classes(version: int) -> dict[str, Any]:
    selector = 'device.attributes["dra.example.com"].mem >= 16' if version % 2 else "true"
    return {
        "dev": {"metadata": {"name": "dev", "uid": "u", "resourceVersion": "1"}, "spec": {}},
        "big": {
            "metadata": {"name": "big", "uid": "u2", "resourceVersion": str(version)},
            "spec": {"selectors": [{"cel": {"expression": selector}}]},
        },
    }


SPECS: list[dict[str, Any]] = [
    {"requests": [{"name": "r", "exactly": {"deviceClassName": "dev", "count": 2}}]},
    {"requests": [{"name": "r", "exactly": {"deviceClassName": "big"}}]},
    {
        "requests": [{"name": "r", "exactly": {"deviceClassName": "dev", "count": 2}}],
        "constraints": [{"matchAttribute": f"{DRIVER}/model"}],
    },
    {
        "requests": [
            {
                "name": "r",
                "exactly": {
                    "deviceClassName": "dev",
                    "count": 2,
                    "selectors": [
                        {"cel": {"expression": 'device.attributes["dra.example.com"].model == "a"'}}
                    ],
                },
            }
        ],
        "constraints": [
            {
                "cel": {
                    "expression": 'devices.map(d, d.attributes["dra.example.com"].mem).sum() >= 40'
                }
            }
        ],
    },
    {
        "requests": [
            {
                "name": "r",
                "firstAvailable": [
                    {"name": "many", "deviceClassName": "big", "count": 3},
                    {"name": "one", "deviceClassName": "dev"},
                ],
            }
        ]
    },
]


def _claims(rng: random.Random) -> list[Claim]:
    picked = rng.sample(range(len(SPECS)), rng.choice([1, 2]))
    return [parse_claim(f"ns/c{i}", {"devices": SPECS[i]}) for i in picked]


def _held(
    rng: random.Random, base: Pools, previous: Pools | None = None
) -> tuple[Pools, set[DeviceID]]:
    """``base`` with random devices allocated, reserved in the pools and reserved by the
    review; built over ``previous`` (whose reach entries it reuses where devices are equal)."""
    states = []
    reserved: set[DeviceID] = set()
    for state in base.states.values():
        names = sorted(state.gathered.devices)
        allocated = frozenset(n for n in names if rng.random() < 0.3)
        also = frozenset(n for n in names if n not in allocated and rng.random() < 0.15)
        states.append(PoolState(state.gathered, allocated, also))
        reserved |= {
            DeviceID(state.key[0], state.key[1], n)
            for n in names
            if n not in allocated and n not in also and rng.random() < 0.1
        }
    return Pools(states, previous), reserved


@pytest.mark.parametrize("seed", range(6))
def test_shared_caches_answer_as_a_fresh_allocator(seed: int) -> None:
    rng = random.Random(seed)
    devices_version, classes_version = 1, 1
    base = _base(rng, devices_version)
    shared: SharedCaches | None = None
    last: Pools | None = None
    kept = dropped = 0
    for _ in range(40):
        roll = rng.random()
        if roll < 0.1:
            devices_version += 1
            base = _base(rng, devices_version)
        elif roll < 0.2:
            classes_version += 1
        classes = _classes(classes_version)
        pools, reserved = _held(rng, base, last)
        last = pools
        previous = shared
        shared = SharedCaches.for_inputs(previous, pools, classes)
        if previous is not None:
            kept += shared is previous
            dropped += shared is not previous
        incremental = Allocator(pools, classes, reserved=reserved)
        shared.attach(incremental)
        claims = _claims(rng)
        scratch = Pools(pools.states.values())  # nothing reused
        for node in rng.sample(NODES, 3):
            fresh = Allocator(scratch, classes, reserved=reserved)
            assert answer(incremental.allocate(claims, node)) == answer(
                fresh.allocate(claims, node)
            )
    assert kept > 0  # the caches did live across reviews
    assert dropped > 0  # and a change of devices or classes dropped them


def test_caches_are_kept_only_over_the_same_devices_and_classes() -> None:
    rng = random.Random(7)
    base = _base(rng, 1)
    first = SharedCaches.for_inputs(None, base, _classes(1))
    held, _ = _held(rng, base)
    assert SharedCaches.for_inputs(first, held, _classes(1)) is first
    assert SharedCaches.for_inputs(first, held, _classes(2)) is not first
    assert SharedCaches.for_inputs(first, _base(rng, 1), _classes(1)) is not first

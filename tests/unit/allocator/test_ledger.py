"""The held ledger (``allocator.ledger``): its books are made only when a search needs them
(a review answered from each node's free candidates never makes them), and devices held
before the books are made count exactly as devices held after."""

from __future__ import annotations

from typing import Any

from apiserver.allocator import Allocator, SharedCaches
from apiserver.allocator import reasons as codes
from apiserver.api.resource import DeviceID
from apiserver.pools import Node, Pools
from apiserver.toolkit import JSON
from tests.unit.builders import pools_of, slice_obj, wanting

DRIVER = "dra.example.com"
NODES = [Node(f"n{i}", {}) for i in range(3)]
CLASSES = {"dev": {"metadata": {"name": "dev", "uid": "u", "resourceVersion": "1"}, "spec": {}}}


def _pools(devices: list[JSON], **extra: Any) -> Pools:
    return pools_of(*(slice_obj(node.name, devices, driver=DRIVER, **extra) for node in NODES))


def _devices(result: Any) -> list[DeviceID]:
    return [d for outcome in result.claims for d in outcome.devices]


async def test_a_review_from_free_candidates_never_makes_the_books() -> None:
    pools = _pools([{"name": f"d{i}"} for i in range(3)])
    shared = SharedCaches.for_inputs(None, pools, CLASSES)
    first = Allocator(pools, CLASSES)
    shared.attach(first)
    answers = await first.review([wanting(1)], NODES)
    again = Allocator(pools, CLASSES)
    shared.attach(again)
    cached = await again.review([wanting(1)], NODES)
    assert [r.feasible for r in cached] == [True] * len(NODES)
    assert [_devices(r) for r in cached] == [_devices(r) for r in answers]
    assert not first.ledger.made
    assert not again.ledger.made

    taken = _devices(cached[0])[0]
    again.hold([taken])
    assert not again.ledger.made  # noted, taken when the books are made
    after = await again.review([wanting(1)], NODES)
    assert again.ledger.made  # the held device's pool needs them
    assert taken in again.held
    assert after[0].feasible
    assert taken not in _devices(after[0])
    assert [_devices(r) for r in after[1:]] == [_devices(r) for r in cached[1:]]


def test_holding_before_the_books_are_made_counts_as_holding_after() -> None:
    consumes = [{"counterSet": "mem", "counters": {"gb": {"value": "4"}}}]
    pools = _pools(
        [{"name": f"d{i}", "consumesCounters": consumes} for i in range(3)],
        sharedCounters=[{"name": "mem", "counters": {"gb": {"value": "8"}}}],
    )
    device = DeviceID(DRIVER, "n0", "d0")
    fresh = Allocator(pools, CLASSES)
    early = Allocator(pools, CLASSES)
    early.hold([device])
    assert not early.ledger.made
    late = Allocator(pools, CLASSES)
    assert late.held == fresh.held  # the books made
    late.hold([device])

    assert early.held == late.held == fresh.held | {device}
    assert early.used == late.used
    assert early.used != fresh.used  # the held device's counters count as consumed
    infeasible = early.allocate([wanting(2)], NODES[0])
    assert not infeasible.feasible
    assert codes.COUNTERS_EXHAUSTED in {r.code for r in infeasible.explanations}
    assert early.allocate([wanting(1)], NODES[0]).feasible

    early.release([device])
    assert early.held == fresh.held
    assert early.used == fresh.used
    assert early.allocate([wanting(2)], NODES[0]).feasible

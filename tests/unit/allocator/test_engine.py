"""The allocator engine: budget, event-loop friendliness, symmetry reduction, caches,
holding devices, and what a CEL constraint costs."""

from __future__ import annotations

import asyncio
from typing import Any

from apiserver.allocator import Allocator, Budget, parse_claim
from apiserver.api.resource import DeviceID
from apiserver.pools import Node, Pools
from tests.unit.builders import pools_of, slice_obj, wanting

DRIVER = "dra.example.com"
NODE = Node("n1")
CLASSES = {"dev": {"spec": {}}}


def pools(*devices: dict[str, Any]) -> Pools:
    return pools_of(slice_obj("n1", list(devices), driver=DRIVER))


def numbered(count: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"name": f"d{i}", "attributes": {"id": {"int": i}}, **extra} for i in range(count)]


SUM = f"devices.map(d, d.attributes['{DRIVER}'].id).sum() == 52"


def test_twelve_choose_six_evaluates_combinations_not_permutations() -> None:
    """KEP-5254: 6 of 12 devices is at most 12C6 = 924 evaluations; none satisfies it."""
    plain = Allocator(pools(*numbered(12)), CLASSES, caches=False, symmetry=False)
    result = plain.allocate([wanting(6, SUM)], NODE)
    assert not result.feasible
    assert result.evaluations == 924


def test_constraint_results_are_memoized_per_set_of_devices() -> None:
    allocator = Allocator(pools(*numbered(12)), CLASSES)
    first = allocator.allocate([wanting(6, SUM)], NODE)
    again = allocator.allocate([wanting(6, SUM)], NODE)
    assert first.evaluations == 924
    assert again.evaluations == 0
    assert again.reasons == first.reasons


def test_interchangeable_devices_are_tried_once() -> None:
    """Five of four identical devices: the groups make it a handful of steps (upstream's
    check-combinations case needs 16 calls, plain permutations 65)."""
    identical = [{"name": f"d{i}", "attributes": {"model": {"string": "a"}}} for i in range(4)]
    # Without caches, so that the search runs (a shortage of free devices is answered
    # before any search otherwise).
    grouped = Allocator(pools(*identical), CLASSES, caches=False).allocate([wanting(5)], NODE)
    plain = Allocator(pools(*identical), CLASSES, symmetry=False, caches=False).allocate(
        [wanting(5)], NODE
    )
    assert not grouped.feasible
    assert not plain.feasible
    assert grouped.steps == 4
    assert plain.steps == 15  # combinations of 4 devices, tried one device at a time
    assert Allocator(pools(*identical), CLASSES).allocate([wanting(5)], NODE).steps == 0
    found = Allocator(pools(*identical), CLASSES).allocate([wanting(3)], NODE)
    assert found.feasible
    assert len(set(found.devices)) == 3


def test_a_budget_ends_the_search_with_a_reason() -> None:
    budget = Budget(steps=1000, chunk=100)
    result = Allocator(pools(*numbered(12)), CLASSES, budget=budget, caches=False).allocate(
        [wanting(6, SUM)], NODE
    )
    assert not result.feasible
    assert result.reasons == ("budget exhausted: 1000 steps",)
    evaluations = Budget(evaluations=50, chunk=100)
    result = Allocator(pools(*numbered(12)), CLASSES, budget=evaluations).allocate(
        [wanting(6, SUM)], NODE
    )
    assert result.reasons == ("budget exhausted: 51 CEL evaluations",)


def test_a_gave_up_search_leaves_no_counters_behind() -> None:
    halves = numbered(
        8, consumesCounters=[{"counterSet": "mem", "counters": {"gb": {"value": "1"}}}]
    )
    counters = [{"name": "mem", "counters": {"gb": {"value": "8"}}}]
    obj = slice_obj("n1", halves, driver=DRIVER, sharedCounters=counters)
    allocator = Allocator(pools_of(obj), CLASSES, budget=Budget(steps=20, chunk=10))
    expression = f"devices.map(d, d.attributes['{DRIVER}'].id).sum() == 100"
    assert not allocator.allocate([wanting(4, expression)], NODE).feasible
    assert allocator.allocate([wanting(8)], NODE).feasible  # every counter is free again


def test_held_devices_are_skipped_until_released() -> None:
    allocator = Allocator(pools(*numbered(2)), CLASSES)
    first = allocator.allocate([wanting(1)], NODE)
    allocator.hold(first.devices)
    second = allocator.allocate([wanting(1)], NODE)
    assert second.devices
    assert second.devices != first.devices
    allocator.hold(second.devices)
    full = allocator.allocate([wanting(1)], NODE)
    assert not full.feasible
    assert "reserved 2" in full.reasons[0]
    allocator.release([DeviceID(DRIVER, "n1", "d0")])
    assert allocator.allocate([wanting(1)], NODE).devices == (DeviceID(DRIVER, "n1", "d0"),)


def test_search_is_a_generator_that_yields_between_chunks() -> None:
    allocator = Allocator(pools(*numbered(12)), CLASSES, budget=Budget(chunk=16), caches=False)
    steps = allocator.search([wanting(6, SUM)], NODE)
    yields = 0
    try:
        while True:
            next(steps)
            yields += 1
    except StopIteration as done:
        result = done.value
    assert not result.feasible
    # A pause every 16 steps and every 16 CEL evaluations (EVALUATIONS_PER_CHUNK), and
    # more when a slice of time runs out first.
    assert yields >= result.steps // 16 + result.evaluations // 16


async def test_review_lets_other_tasks_run_while_it_searches() -> None:
    allocator = Allocator(pools(*numbered(12)), CLASSES, budget=Budget(chunk=64), caches=False)
    ticks = 0
    seen_during: list[int] = []

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    before = ticks
    results = await allocator.review([wanting(6, SUM)], [NODE, Node("n2")])
    seen_during.append(ticks - before)
    task.cancel()
    assert [r.feasible for r in results] == [False, False]
    assert seen_during[0] >= results[0].steps // 64


def test_a_constraint_that_fails_at_run_time_says_why() -> None:
    result = Allocator(pools(*numbered(3)), CLASSES).allocate(
        [wanting(2, f"devices.all(d, d.attributes['{DRIVER}'].missing == 1)")], NODE
    )
    assert not result.feasible
    assert "constraint #0 (cel) unsatisfiable among 3 candidates" in result.reasons[0]
    assert "no such key: missing" in result.reasons[0]


def test_a_selector_that_does_not_compile_is_the_claims_reason() -> None:
    request = {
        "deviceClassName": "dev",
        "selectors": [{"cel": {"expression": "device.attributes["}}],
    }
    claim = parse_claim("default/c", {"devices": {"requests": [{"name": "r", "exactly": request}]}})
    result = Allocator(pools(*numbered(1)), CLASSES).allocate([claim], NODE)
    assert not result.feasible
    assert result.reasons[0].startswith("claim default/c request r: selector #0: CEL compile error")


def test_an_allocated_claim_fits_only_where_its_allocation_is_available() -> None:
    """As the scheduler filters an allocated claim: its allocation's node selector decides
    the nodes (a node-local device's allocation names its node); none means every node."""
    allocator = Allocator(pools(*numbered(1)), CLASSES)
    fresh = allocator.allocate([wanting(1)], NODE)
    [outcome] = fresh.claims
    devices = {"requests": [{"name": "r", "exactly": {"deviceClassName": "dev", "count": 1}}]}
    claim_json = {"spec": {"devices": devices}, "status": {"allocation": outcome.allocation}}
    allocated = parse_claim("default/c", claim_json)
    assert outcome.allocation is not None
    assert outcome.allocation["nodeSelector"]
    assert allocator.allocate([allocated], NODE).feasible
    elsewhere = allocator.allocate([allocated], Node("n2"))
    assert not elsewhere.feasible
    assert "not available on node n2" in elsewhere.reasons[0]
    anywhere = {**outcome.allocation, "nodeSelector": None}
    unpinned = parse_claim(
        "default/c", {"spec": {"devices": devices}, "status": {"allocation": anywhere}}
    )
    assert allocator.allocate([unpinned], Node("n2")).feasible


def test_the_result_limit_moves_to_the_next_subrequest_without_retrying_devices() -> None:
    """Two requests of 32-or-16 distinct devices (upstream's
    prioritized-list-max-allocation-limit-request with devices that are not
    interchangeable): 32 + anything exceeds the claim limit whichever 32 devices the first
    request took, so the search goes to the first request's second subrequest at once
    instead of trying its 64C32 device combinations."""
    pair = [
        {"name": "s32", "deviceClassName": "dev", "count": 32},
        {"name": "s16", "deviceClassName": "dev", "count": 16},
    ]
    claim = parse_claim(
        "default/c",
        {"devices": {"requests": [{"name": n, "firstAvailable": pair} for n in ("a", "b")]}},
    )
    for symmetry in (True, False):
        allocator = Allocator(pools(*numbered(64)), CLASSES, symmetry=symmetry)
        result = allocator.allocate([claim], NODE)
        assert result.feasible, result.reasons
        [outcome] = result.claims
        assert outcome.allocation is not None
        requests = [r["request"] for r in outcome.allocation["devices"]["results"]]
        assert sorted(set(requests)) == ["a/s16", "b/s16"]
        assert len(requests) == 32
        assert result.steps <= 64 + 64  # a handful of failed subrequest starts, no combinations

"""What one pool offers (KEP-5677 test plan: allocation states, cross-slice validation errors,
generation handling): ``summarize`` over the facts of slices and devices."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.resource import slice_view
from apiserver.devices import DeviceState
from apiserver.pools import DeviceFacts, PoolSummary, device_facts, gather, summarize, summary_of
from tests.unit.builders import slice_obj

DRIVER = "gpu.example.com"


def raw_slice(
    name: str, devices: list[dict[str, Any]] | None = None, *, pool: str = "pool-a", **spec: Any
) -> dict[str, Any]:
    """A slice of pool-a on node-1 unless said otherwise."""
    return slice_obj(name, devices, driver=DRIVER, pool=pool, node="node-1", **spec)


def state(
    slice_name: str, device: dict[str, Any], nodes: dict[str, Any] | None = None
) -> DeviceState:
    return DeviceState(
        name=f"{slice_name}.{device['name']}",
        uid="u",
        slice_name=slice_name,
        slice_uid="su",
        created=None,
        driver=DRIVER,
        pool={"name": "pool-a", "generation": 1, "resourceSliceCount": 1},
        nodes=nodes if nodes is not None else {"nodeName": "node-1"},
        device=device,
    )


def devices_of(slice_name: str, *names: str) -> list[DeviceFacts]:
    return [device_facts(state(slice_name, {"name": n})) for n in names]


def pool(
    slices: list[dict[str, Any]],
    devices: list[DeviceFacts],
    allocated: set[str] | None = None,
) -> PoolSummary:
    facts = [f for f in (slice_view(s) for s in slices) if f is not None]
    return summarize(DRIVER, "pool-a", facts, devices, allocated or set())


def counts(summary: PoolSummary) -> tuple[int, int, int, int]:
    return summary.total, summary.allocated, summary.available, summary.unavailable


# -- allocation states ------------------------------------------------------------------


def test_nothing_allocated_everything_available() -> None:
    summary = pool([raw_slice("s")], devices_of("s", "gpu-0", "gpu-1", "gpu-2", "gpu-3"))
    assert counts(summary) == (4, 0, 4, 0)
    assert summary.errors == ()
    assert summary.entry() == {
        "driver": DRIVER,
        "poolName": "pool-a",
        "nodeName": "node-1",
        "totalDevices": 4,
        "allocatedDevices": 0,
        "availableDevices": 4,
        "unavailableDevices": 0,
        "sliceCount": 1,
        "generation": 1,
    }


def test_allocated_devices_are_not_available() -> None:
    devices = devices_of("s", "gpu-0", "gpu-1", "gpu-2", "gpu-3")
    assert counts(pool([raw_slice("s")], devices, {"gpu-0", "gpu-1", "gpu-2"})) == (4, 3, 1, 0)
    assert counts(pool([raw_slice("s")], devices, {"gpu-0", "gpu-1", "gpu-2", "gpu-3"})) == (
        4,
        4,
        0,
        0,
    )


def test_allocations_of_devices_the_pool_does_not_have_do_not_count() -> None:
    summary = pool([raw_slice("s")], devices_of("s", "gpu-0"), {"gpu-0", "gpu-9"})
    assert counts(summary) == (1, 1, 0, 0)


@pytest.mark.parametrize(
    ("effect", "unavailable"),
    [("NoSchedule", 1), ("NoExecute", 1), ("None", 0), ("SomethingNew", 0)],
)
def test_taints_that_keep_claims_away_make_a_device_unavailable(
    effect: str, unavailable: int
) -> None:
    tainted = {"name": "gpu-1", "taints": [{"key": "example.com/broken", "effect": effect}]}
    devices = [*devices_of("s", "gpu-0"), device_facts(state("s", tainted))]
    summary = pool([raw_slice("s")], devices)
    assert (summary.unavailable, summary.available) == (unavailable, 2 - unavailable)


def test_an_allocated_tainted_device_counts_as_allocated_only() -> None:
    tainted = {"name": "gpu-0", "taints": [{"key": "k", "effect": "NoExecute"}]}
    summary = pool([raw_slice("s")], [device_facts(state("s", tainted))], {"gpu-0"})
    assert counts(summary) == (1, 1, 0, 0)


def _partitioned() -> tuple[dict[str, Any], list[DeviceFacts]]:
    """One GPU of 80Gi: whole, or two halves; the counter set comes from a mixin."""
    gpu = raw_slice(
        "s",
        [],
        sharedCounters=[{"name": "gpu-0-counters", "includes": ["gpu"]}],
        mixins={"counterSet": [{"name": "gpu", "counters": {"memory": {"value": "80Gi"}}}]},
    )

    def consuming(name: str, memory: str) -> DeviceFacts:
        device = {
            "name": name,
            "consumesCounters": [
                {"counterSet": "gpu-0-counters", "counters": {"memory": {"value": memory}}}
            ],
        }
        return device_facts(state("s", device))

    return gpu, [
        consuming("whole", "80Gi"),
        consuming("half-0", "40Gi"),
        consuming("half-1", "40Gi"),
    ]


def test_devices_whose_counters_are_used_up_are_unavailable() -> None:
    gpu, devices = _partitioned()
    assert counts(pool([gpu], devices)) == (3, 0, 3, 0)
    # The whole GPU takes all 80Gi: both halves are unavailable.
    assert counts(pool([gpu], devices, {"whole"})) == (3, 1, 0, 2)
    # One half leaves 40Gi: the other half still fits, the whole GPU does not.
    assert counts(pool([gpu], devices, {"half-0"})) == (3, 1, 1, 1)
    assert counts(pool([gpu], devices, {"half-0", "half-1"})) == (3, 2, 0, 1)


def test_consuming_an_unknown_counter_set_is_unavailable_and_reported() -> None:
    device = {
        "name": "gpu-0",
        "consumesCounters": [{"counterSet": "missing", "counters": {"memory": {"value": "1"}}}],
    }
    summary = pool([raw_slice("s")], [device_facts(state("s", device))])
    assert counts(summary) == (1, 0, 0, 1)
    assert summary.errors == (
        "pool pool-a: device gpu-0 consumes counter set missing, which the pool does not define",
    )


def _own_slice_layout(counter_set: str = "gpu-0") -> tuple[list[dict[str, Any]], list[DeviceFacts]]:
    """Kubernetes 1.35+ layout: the counter set in a slice of its own, the devices that
    consume it (the whole GPU and its halves) in another slice of the same pool."""
    counter_slice = raw_slice(
        "counters",
        count=2,
        sharedCounters=[{"name": counter_set, "counters": {"memory": {"value": "80Gi"}}}],
    )
    parts = {"whole": "80Gi", "half-0": "40Gi", "half-1": "40Gi"}
    devices = [
        {
            "name": name,
            "consumesCounters": [
                {"counterSet": "gpu-0", "counters": {"memory": {"value": memory}}}
            ],
        }
        for name, memory in parts.items()
    ]
    device_slice = raw_slice("devices", devices, count=2)
    return [counter_slice, device_slice], [device_facts(state("devices", d)) for d in devices]


def test_counter_set_in_a_slice_of_its_own_is_counted_across_the_pool() -> None:
    slices, devices = _own_slice_layout()
    summary = pool(slices, devices)
    assert counts(summary) == (3, 0, 3, 0)
    assert summary.errors == ()
    assert summary.slice_count == 2
    # A half taken: the other half still fits, the whole GPU does not; and back.
    assert counts(pool(slices, devices, {"half-0"})) == (3, 1, 1, 1)
    assert counts(pool(slices, devices, {"whole"})) == (3, 1, 0, 2)
    assert counts(pool(slices, devices, set())) == (3, 0, 3, 0)


def test_a_pool_lacking_the_consumed_counter_set_is_invalid_with_a_reason() -> None:
    slices, devices = _own_slice_layout(counter_set="gpu-1")
    facts = [f for f in (slice_view(s) for s in slices) if f is not None]
    gathered = gather(DRIVER, "pool-a", facts, devices)
    assert gathered.invalid
    assert not gathered.incomplete
    assert gathered.problems == (
        "devices half-0, half-1, whole consume counter set gpu-0, which the pool does not define",
    )
    summary = summary_of(gathered, set())
    assert counts(summary) == (3, 0, 0, 3)


def test_counter_slice_not_yet_published_makes_the_pool_incomplete() -> None:
    slices, devices = _own_slice_layout()
    gathered = gather(DRIVER, "pool-a", [f for f in [slice_view(slices[1])] if f], devices)
    assert gathered.incomplete
    assert not gathered.usable


def test_a_counter_set_name_twice_in_the_pool_is_invalid() -> None:
    slices, devices = _own_slice_layout()
    again = raw_slice(
        "counters-again",
        count=3,
        sharedCounters=[{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}],
    )
    for s in slices:
        s["spec"]["pool"]["resourceSliceCount"] = 3
    gathered = gather(
        DRIVER, "pool-a", [f for f in (slice_view(s) for s in [*slices, again]) if f], devices
    )
    assert gathered.invalid
    assert "counter set gpu-0 defined in more than one slice" in gathered.problems


# -- generations and completeness ----------------------------------------------------------


def test_only_the_newest_generation_counts_and_older_slices_are_not_errors() -> None:
    slices = [raw_slice("old", generation=1), raw_slice("new", generation=2)]
    devices = devices_of("old", "gpu-0", "gpu-1", "gpu-2") + devices_of("new", "gpu-0")
    summary = pool(slices, devices, {"gpu-1"})
    assert (summary.generation, summary.slice_count) == (2, 1)
    assert counts(summary) == (1, 0, 1, 0)
    assert summary.errors == ()


def test_an_incomplete_pool_is_counted_as_published_and_reported() -> None:
    slices = [raw_slice("s-0", count=3), raw_slice("s-1", count=3)]
    summary = pool(slices, devices_of("s-0", "a") + devices_of("s-1", "b"))
    assert summary.incomplete
    assert (summary.slice_count, summary.total) == (2, 2)
    assert summary.errors == (
        "pool pool-a: incomplete: 2 of 3 slices of generation 1 are published",
    )


def test_more_slices_than_announced_and_disagreeing_counts_are_reported() -> None:
    too_many = pool([raw_slice("s-0"), raw_slice("s-1")], [])
    assert not too_many.incomplete
    assert too_many.errors == (
        "pool pool-a: 2 slices of generation 1, more than its resourceSliceCount 1",
    )
    disagree = pool([raw_slice("s-0", count=2), raw_slice("s-1", count=1)], [])
    assert disagree.errors == (
        "pool pool-a: slices of generation 1 disagree on resourceSliceCount (1, 2)",
    )


# -- cross-slice validation ------------------------------------------------------------------


def test_a_device_name_in_two_slices_counts_once_and_is_reported() -> None:
    slices = [raw_slice("s-0", count=2), raw_slice("s-1", count=2)]
    devices = devices_of("s-0", "gpu-0", "gpu-1") + devices_of("s-1", "gpu-0")
    summary = pool(slices, devices)
    assert summary.total == 2
    assert summary.errors == ("pool pool-a: device gpu-0 appears in multiple slices",)


def test_many_repeated_names_are_one_message() -> None:
    names = [f"gpu-{i}" for i in range(6)]
    slices = [raw_slice("s-0", count=2), raw_slice("s-1", count=2)]
    summary = pool(slices, devices_of("s-0", *names) + devices_of("s-1", *names))
    assert summary.errors == (
        "pool pool-a: 6 device names appear in multiple slices: gpu-0, gpu-1, gpu-2 and 3 more",
    )


def test_slices_on_different_nodes_are_reported_and_name_no_node() -> None:
    slices = [
        raw_slice("s-0", count=2, nodeName="node-1"),
        raw_slice("s-1", count=2, nodeName="node-2"),
    ]
    summary = pool(slices, devices_of("s-0", "a") + devices_of("s-1", "b"))
    assert summary.node_name is None
    assert "nodeName" not in summary.entry()
    assert summary.errors == (
        "pool pool-a: slices disagree on node placement: nodeName node-1 (1 slice),"
        " nodeName node-2 (1 slice)",
    )


def test_node_local_mixed_with_all_nodes_is_reported() -> None:
    slices = [raw_slice("s-0", count=2), raw_slice("s-1", count=2, allNodes=True)]
    summary = pool(slices, devices_of("s-0", "a") + devices_of("s-1", "b"))
    assert summary.errors == (
        "pool pool-a: slices disagree on node placement: allNodes (1 slice),"
        " nodeName node-1 (1 slice)",
    )


def test_a_network_pool_has_no_node_and_no_error() -> None:
    summary = pool([raw_slice("s", allNodes=True)], devices_of("s", "a"))
    assert summary.node_name is None
    assert summary.errors == ()


def test_per_device_placement_names_the_node_its_devices_share() -> None:
    slices = [raw_slice("s", perDeviceNodeSelection=True)]
    same = [device_facts(state("s", {"name": n}, {"nodeName": "node-7"})) for n in ("a", "b")]
    assert pool(slices, same).node_name == "node-7"
    spread = [
        device_facts(state("s", {"name": "a"}, {"nodeName": "node-7"})),
        device_facts(state("s", {"name": "b"}, {"nodeName": "node-8"})),
    ]
    spanning = pool(slices, spread)
    assert spanning.node_name is None
    assert spanning.errors == ()  # a per-device pool may span nodes on purpose


def test_messages_are_at_most_256_characters() -> None:
    long_pool = ".".join(["p" * 60] * 4)
    facts = [
        f
        for f in (
            slice_view(raw_slice("s-0", pool=long_pool, count=3)),
            slice_view(raw_slice("s-1", pool=long_pool, count=3, nodeName="node-2")),
        )
        if f is not None
    ]
    summary = summarize(DRIVER, long_pool, facts, [], set())
    assert len(summary.errors) == 2
    assert all(len(e) <= 256 for e in summary.errors)
    assert all(e.startswith(f"pool {long_pool}: ") for e in summary.errors)

"""The allocator against a brute-force oracle, and pool status against the allocator.

Random small clusters (one node-local pool and one ``allNodes`` pool, up to seven devices
with a few attributes (one a list), taints and partitionable counters, some devices allocated or
reserved) and random claims (counts, ``All``, ``firstAvailable``, admin access, selectors,
tolerations, matchAttribute, distinctAttribute (on scalars and on a list attribute), CEL
constraints). The oracle tries every
combination; the allocator must agree on feasibility, and every answer it gives must pass
the independent validity check — with symmetry reduction and caches on and off.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apiserver.allocator import Allocator, parse_claim
from apiserver.api.resource import DeviceID
from apiserver.pools import Node, summary_of
from tests.unit.allocator.check import brute_force, held_devices, valid
from tests.unit.builders import pools_of

DRIVER = "dra.example.com"
NODE = Node("n1", {"zone": "a"})
CLASSES = {
    "any": {"spec": {"selectors": []}},
    "big": {
        "spec": {"selectors": [{"cel": {"expression": f"device.attributes['{DRIVER}'].size >= 2"}}]}
    },
}
SELECTORS = [
    f"device.attributes['{DRIVER}'].color == 'red'",
    f"device.attributes['{DRIVER}'].size < 3",
]
CEL_CONSTRAINTS = [
    f"devices.map(d, d.attributes['{DRIVER}'].size).sum() <= 4",
    f"devices.all(d, d.attributes['{DRIVER}'].color == devices[0].attributes['{DRIVER}'].color)",
    f"devices.exists(d, d.attributes['{DRIVER}'].size == 3)",
]

device_st = st.fixed_dictionaries(
    {
        "size": st.integers(0, 3),
        "color": st.sampled_from(["red", "blue"]),
        "tainted": st.booleans(),
        "half": st.booleans(),
        "links": st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True),
    }
)


@st.composite
def clusters(draw: Any) -> dict[str, Any]:
    local = draw(st.lists(device_st, min_size=0, max_size=4))
    shared = draw(st.lists(device_st, min_size=0, max_size=3))
    slices = []
    ids = []
    for name, devices, where in (
        ("local", local, {"nodeName": "n1"}),
        ("shared", shared, {"allNodes": True}),
    ):
        if not devices and name == "shared":
            continue
        raw = []
        for i, d in enumerate(devices):
            entry: dict[str, Any] = {
                "name": f"{name}-{i}",
                "attributes": {
                    "size": {"int": d["size"]},
                    "color": {"string": d["color"]},
                    "id": {"string": f"{name}-{i}"},
                    "links": {"strings": d["links"]},
                },
            }
            if d["tainted"]:
                entry["taints"] = [{"key": "bad", "effect": "NoSchedule"}]
            if d["half"] and name == "local":
                entry["consumesCounters"] = [
                    {"counterSet": "mem", "counters": {"gb": {"value": "4"}}}
                ]
            raw.append(entry)
            ids.append(DeviceID(DRIVER, name, entry["name"]))
        spec: dict[str, Any] = {
            "driver": DRIVER,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": raw,
            **where,
        }
        if name == "local":
            spec["sharedCounters"] = [{"name": "mem", "counters": {"gb": {"value": "8"}}}]
        slices.append({"metadata": {"name": name, "uid": name}, "spec": spec})
    held = draw(st.lists(st.sampled_from(ids), max_size=2, unique=True)) if ids else []
    split = draw(st.integers(0, len(held)))
    allocated = [
        {
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {"request": "r", "driver": d.driver, "pool": d.pool, "device": d.device}
                            for d in held[:split]
                        ]
                    }
                }
            }
        }
    ]
    return {"slices": slices, "allocated": allocated, "reserved": held[split:]}


@st.composite
def requests(draw: Any, name: str) -> dict[str, Any]:
    def exact() -> dict[str, Any]:
        out: dict[str, Any] = {"deviceClassName": draw(st.sampled_from(sorted(CLASSES)))}
        if draw(st.integers(0, 5)) == 0:
            out["allocationMode"] = "All"
        else:
            out["count"] = draw(st.integers(1, 3))
        if draw(st.booleans()):
            out["selectors"] = [{"cel": {"expression": draw(st.sampled_from(SELECTORS))}}]
        if draw(st.booleans()):
            out["tolerations"] = [{"key": "bad", "operator": "Exists"}]
        return out

    if draw(st.integers(0, 3)) == 0:
        subs = [{"name": f"s{i}", **exact()} for i in range(draw(st.integers(1, 2)))]
        return {"name": name, "firstAvailable": subs}
    body = exact()
    if draw(st.integers(0, 6)) == 0:
        body["adminAccess"] = True
    return {"name": name, "exactly": body}


@st.composite
def claims(draw: Any) -> list[dict[str, Any]]:
    out = []
    for c in range(draw(st.integers(1, 2))):
        reqs = [draw(requests(f"r{i}")) for i in range(draw(st.integers(1, 2)))]
        constraints = []
        kind = draw(
            st.sampled_from(["none", "match", "distinct", "match-list", "distinct-list", "cel"])
        )
        if kind == "match":
            constraints.append({"matchAttribute": f"{DRIVER}/color"})
        elif kind == "distinct":
            constraints.append({"distinctAttribute": f"{DRIVER}/size"})
        elif kind == "match-list":
            constraints.append({"matchAttribute": f"{DRIVER}/links"})
        elif kind == "distinct-list":
            constraints.append({"distinctAttribute": f"{DRIVER}/links"})
        elif kind == "cel":
            constraints.append({"cel": {"expression": draw(st.sampled_from(CEL_CONSTRAINTS))}})
        out.append(
            {"name": f"c{c}", "spec": {"devices": {"requests": reqs, "constraints": constraints}}}
        )
    return out


def build(cluster: dict[str, Any]) -> Any:
    return pools_of(*cluster["slices"], claims=cluster["allocated"], reserved=cluster["reserved"])


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), raw_claims=claims())
def test_allocator_agrees_with_brute_force(cluster: dict[str, Any], raw_claims: list[Any]) -> None:
    pools = build(cluster)
    parsed = [parse_claim(c["name"], c) for c in raw_claims]
    held = held_devices(pools)
    expected = brute_force(pools, CLASSES, NODE, parsed, held)
    for options in ({}, {"symmetry": False, "caches": False}):
        result = Allocator(pools, CLASSES, **options).allocate(parsed, NODE)
        assert result.feasible == expected, (options, result.reasons)
        if result.feasible:
            allocations = [c.allocation for c in result.claims]
            assert valid(pools, CLASSES, NODE, parsed, allocations, held) is None
        else:
            assert result.reasons


@settings(max_examples=300, deadline=None)
@given(cluster=clusters())
def test_pool_status_and_allocator_agree_on_free_devices(cluster: dict[str, Any]) -> None:
    """A device counts as available in pool status exactly when a claim for that one device
    (selected by its ``id`` attribute), with no toleration, can be allocated."""
    pools = build(cluster)
    allocator = Allocator(pools, {"any": {"spec": {}}})
    for state in pools.states.values():
        summary = summary_of(state.gathered, state.allocated | state.reserved)
        allocatable = 0
        for name in state.gathered.devices:
            expression = f"device.attributes['{DRIVER}'].id == '{name}'"
            request = {"deviceClassName": "any", "selectors": [{"cel": {"expression": expression}}]}
            claim = parse_claim(
                "one", {"devices": {"requests": [{"name": "r", "exactly": request}]}}
            )
            allocatable += allocator.allocate([claim], NODE).feasible
        assert allocatable == summary.available, (summary, state.occupancy)

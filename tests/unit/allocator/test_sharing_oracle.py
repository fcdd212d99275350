"""The allocator's search over shared devices against a brute-force oracle.

Random small pools of multi-allocatable devices (bandwidth with a stepped range or valid
values, some already consumed by stored shares, some devices dedicated) and random claims
(one or two requests, counts, bandwidth asked or not). The oracle tries every assignment of
requests to devices (distinct devices within a request, shared devices again across
requests and claims, dedicated ones once) and sums what each share consumes; the rounding
itself is ``api.resource.capacity``'s, checked by its own table of upstream's cases. The
allocator must agree on feasibility, with and without symmetry reduction and caches, and
every answer it gives must pass the independent validity check.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apiserver.allocator import Allocator, Claim, parse_claim
from apiserver.api.resource import device_capacities, share
from apiserver.pools import Node, Pools
from tests.unit.allocator.check import held_devices, valid
from tests.unit.builders import pools_of, slice_obj

DRIVER = "dra.example.com"
NODE = Node("n1")
CLASSES = {"nic": {"spec": {}}}
POLICIES = [
    {"default": "1", "validRange": {"min": "1", "step": "2"}},
    {"default": "2", "validValues": ["1", "2", "4"]},
    None,
]

device_st = st.fixed_dictionaries(
    {
        "shared": st.booleans(),
        "bandwidth": st.integers(2, 8),
        "policy": st.integers(0, len(POLICIES) - 1),
        "used": st.integers(0, 4),
    }
)


@st.composite
def clusters(draw: Any) -> dict[str, Any]:
    devices = draw(st.lists(device_st, min_size=1, max_size=4))
    raw, stored = [], []
    for i, d in enumerate(devices):
        capacity: dict[str, Any] = {"value": str(d["bandwidth"])}
        policy = POLICIES[d["policy"]]
        if d["shared"] and policy is not None:
            capacity["requestPolicy"] = policy
        entry: dict[str, Any] = {"name": f"d{i}", "capacity": {"bandwidth": capacity}}
        if d["shared"]:
            entry["allowMultipleAllocations"] = True
            if d["used"]:
                stored.append(
                    {
                        "request": "r",
                        "driver": DRIVER,
                        "pool": "n1",
                        "device": f"d{i}",
                        "shareID": f"00000000-0000-4000-8000-{i:012d}",
                        "consumedCapacity": {"bandwidth": str(min(d["used"], d["bandwidth"]))},
                    }
                )
        raw.append(entry)
    obj = slice_obj("n1", raw, driver=DRIVER)
    claim = {"status": {"allocation": {"devices": {"results": stored}}}}
    return {"slices": [obj], "allocated": [claim]}


@st.composite
def claims(draw: Any) -> list[dict[str, Any]]:
    out = []
    for c in range(draw(st.integers(1, 3))):
        requests = []
        for r in range(draw(st.integers(1, 2))):
            exactly: dict[str, Any] = {"deviceClassName": "nic", "count": draw(st.integers(1, 2))}
            asked = draw(st.integers(0, 5))
            if asked:
                exactly["capacity"] = {"requests": {"bandwidth": str(asked)}}
            requests.append({"name": f"r{r}", "exactly": exactly})
        out.append({"name": f"c{c}", "spec": {"devices": {"requests": requests}}})
    return out


def build(cluster: dict[str, Any]) -> Pools:
    return pools_of(*cluster["slices"], claims=cluster["allocated"])


def _assignments(claims: list[Claim], devices: list[str]) -> Iterator[list[tuple[Any, str]]]:
    """Every way to give each request of each claim its count of distinct devices."""
    slots = [(claim, request.alternatives[0]) for claim in claims for request in claim.requests]
    choices = [list(itertools.combinations(devices, alt.count)) for _, alt in slots]
    for pick in itertools.product(*choices):
        yield [(alt, name) for (_, alt), names in zip(slots, pick, strict=True) for name in names]


def brute_force(pools: Pools, claims: list[Claim]) -> bool:
    state = pools.states[(DRIVER, "n1")]
    raw = {n: d.state.device for n, d in state.gathered.devices.items() if d.state is not None}
    for assignment in _assignments(claims, sorted(raw)):
        used = {n: dict(a) for n, a in state.shared.items()}
        dedicated: list[str] = []
        ok = True
        for alternative, name in assignment:
            device = raw[name]
            if name in state.allocated:
                ok = False
                break
            taken = share(alternative.capacity, device_capacities(device), used.get(name))
            if taken is None:
                ok = False
                break
            if device.get("allowMultipleAllocations") is True:
                entry = used.setdefault(name, {})
                for key, amount in taken.items():
                    entry[key] = entry.get(key, 0) + amount
            else:
                dedicated.append(name)
        if ok and len(set(dedicated)) == len(dedicated):
            return True
    return False


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), raw_claims=claims())
def test_sharing_agrees_with_brute_force(cluster: dict[str, Any], raw_claims: list[Any]) -> None:
    pools = build(cluster)
    parsed = [parse_claim(c["name"], c) for c in raw_claims]
    expected = brute_force(pools, parsed)
    for options in ({}, {"symmetry": False, "caches": False}):
        result = Allocator(pools, CLASSES, **options).allocate(parsed, NODE)
        assert result.feasible == expected, (options, result.reasons)
        if result.feasible:
            allocations = [c.allocation for c in result.claims]
            problem = valid(pools, CLASSES, NODE, parsed, allocations, held_devices(pools))
            assert problem is None, (problem, allocations)
        else:
            assert result.reasons

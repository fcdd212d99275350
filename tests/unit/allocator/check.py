"""An independent check that an allocation is valid, a brute-force allocator for tiny
inputs (every combination of devices, checked one by one), and what two allocators' answers
are compared on.

Nothing here uses the allocator's search, groups or constraints: only the pools layer (what
exists, where, what is held) and the CEL layer, so the oracle and the allocator can disagree.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apiserver.allocator import Alternative, Claim, NodeResult
from apiserver.cel import (
    EvaluationError,
    compile_constraint,
    compile_selector,
    device_value,
    evaluate,
)
from apiserver.cel.quantity import parse
from apiserver.pools import Node, Pools, Reach
from apiserver.toolkit import JSON

BLOCKING = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class Pick:
    request: str
    reach: Reach
    admin: bool
    consumed: tuple[tuple[str, int], ...] | None = None
    """A share of a device that allows multiple allocations: what it consumes."""

    @property
    def key(self) -> tuple[str, str, str]:
        g = self.reach.pool.gathered
        return (g.driver, g.pool, self.reach.device.name)


def _selected(expressions: Sequence[str], reach: Reach) -> bool:
    assert reach.device.state is not None
    try:
        value = device_value(reach.pool.gathered.driver, reach.device.state.device)
        return all(evaluate(compile_selector(e, cost_limit=None), value) for e in expressions)
    except EvaluationError:
        return False


def _tolerates(taint: JSON, tolerations: Sequence[JSON]) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("key") and t["key"] != taint.get("key"):
            continue
        if (t.get("operator") or "Equal") == "Exists":
            return True
        if (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def eligible(
    alternative: Alternative, reach: Reach, classes: Mapping[str, JSON], held: set[Any]
) -> bool:
    """May this device serve this alternative, ignoring the other picks?"""
    if not reach.pool.gathered.usable:
        return False
    klass = classes.get(alternative.class_name)
    if klass is None:
        return False
    class_selectors = [
        s["cel"]["expression"] for s in (klass.get("spec") or {}).get("selectors") or ()
    ]
    if not _selected([*class_selectors, *alternative.selectors], reach):
        return False
    assert reach.device.state is not None
    for taint in reach.device.state.device.get("taints") or ():
        if taint.get("effect") in BLOCKING and not _tolerates(taint, alternative.tolerations):
            return False
    g = reach.pool.gathered
    return alternative.admin or (g.driver, g.pool, reach.device.name) not in held


def _attribute(reach: Reach, name: str) -> Any:
    assert reach.device.state is not None
    attributes = reach.device.state.device.get("attributes") or {}
    found = attributes.get(name)
    domain, _, ident = name.rpartition("/")
    if found is None and domain == reach.pool.gathered.driver:
        found = attributes.get(ident)
    if not found:
        return None
    kind, value = next(iter(found.items()))
    if isinstance(value, list):
        # A list attribute: the set of its elements, typed like the scalar.
        return frozenset((kind[:-1], v) for v in value) or None
    return frozenset(((kind, value),))


def constraints_hold(claim: Claim, picks: Sequence[Pick]) -> bool:
    for spec in claim.constraints:
        chosen = [
            p
            for p in picks
            if not spec.requests
            or p.request in spec.requests
            or p.request.split("/")[0] in spec.requests
        ]
        if spec.match_attribute is not None:
            values = [_attribute(p.reach, spec.match_attribute) for p in chosen]
            if any(v is None for v in values):
                return False
            if values and not frozenset.intersection(*values):
                return False
        elif spec.distinct_attribute is not None:
            values = [_attribute(p.reach, spec.distinct_attribute) for p in chosen]
            if any(v is None for v in values):
                return False
            if sum(map(len, values)) != len(frozenset().union(*values)):
                return False
        elif spec.expression is not None:
            devices = []
            for p in chosen:
                assert p.reach.device.state is not None
                devices.append(
                    device_value(p.reach.pool.gathered.driver, p.reach.device.state.device)
                )
            try:
                if not evaluate(compile_constraint(spec.expression, cost_limit=None), devices):
                    return False
            except EvaluationError:
                return False
    return True


def counters_hold(pools: Pools, held: set[Any], picks: Sequence[Pick]) -> bool:
    used: dict[tuple[Any, str, str], int] = {}
    devices = [
        (state, state.gathered.devices[name])
        for state in pools.states.values()
        for name in state.gathered.devices
        if (state.key[0], state.key[1], name) in held
    ] + [(p.reach.pool, p.reach.device) for p in picks if not p.admin]
    for state, device in devices:
        for set_name, amounts in device.consumes:
            for counter, amount in amounts:
                key = (state.key, set_name, counter)
                used[key] = used.get(key, 0) + amount
    for (pool, set_name, counter), amount in used.items():
        state = pools.states[pool]
        limit = state.gathered.counter_sets.get(set_name, {}).get(counter)
        if limit is None or amount > limit:
            return False
    return True


def held_devices(pools: Pools, reserved: Sequence[Any] = ()) -> set[Any]:
    out = set(reserved)
    for state in pools.states.values():
        for name in state.allocated | state.reserved:
            out.add((state.key[0], state.key[1], name))
    return out


def valid(
    pools: Pools,
    classes: Mapping[str, JSON],
    node: Node,
    claims: Sequence[Claim],
    allocations: Sequence[JSON],
    held: set[Any],
) -> str | None:
    """None when the allocations (one per claim, upstream AllocationResult) are valid on the
    node, else what is wrong."""
    reach = {
        (r.pool.gathered.driver, r.pool.gathered.pool, r.device.name): r
        for r in pools.reachable(node)
    }
    everyone: list[Pick] = []
    for claim, allocation in zip(claims, allocations, strict=True):
        if claim.allocation is not None:
            continue
        results = allocation["devices"]["results"]
        if len(results) > 32:
            return f"{claim.name}: more than 32 devices"
        picks: list[Pick] = []
        for request in claim.requests:
            names = {a.name: a for a in request.alternatives}
            mine = [r for r in results if r["request"] in names]
            chosen = {r["request"] for r in mine}
            if len(chosen) != 1:
                return f"{claim.name}: request {request.name} has results for {sorted(chosen)}"
            alternative = names[chosen.pop()]
            for r in mine:
                found = reach.get((r["driver"], r["pool"], r["device"]))
                if found is None:
                    return f"{claim.name}: {r['device']} is not reachable from {node.name}"
                if not eligible(alternative, found, classes, held):
                    return f"{claim.name}: {r['device']} cannot serve {alternative.name}"
                if bool(r.get("adminAccess")) != alternative.admin:
                    return f"{claim.name}: adminAccess of {r['device']}"
                shared = _shared(found)
                if shared != ("shareID" in r):
                    return f"{claim.name}: shareID of {r['device']}"
                consumed = None
                if shared:
                    consumed = tuple(
                        sorted(
                            (k, parse(v).nanos) for k, v in r.get("consumedCapacity", {}).items()
                        )
                    )
                picks.append(Pick(alternative.name, found, alternative.admin, consumed))
            if alternative.all:
                every = [x for x in reach.values() if eligible(alternative, x, classes, set())]
                if len(mine) != len(every) or not every:
                    return f"{claim.name}: request {request.name} is not all devices"
            elif len(mine) != alternative.count:
                return f"{claim.name}: request {request.name} has {len(mine)} devices"
        if len(results) != len(picks):
            return f"{claim.name}: results for unknown requests"
        whole = [p.key for p in picks if p.consumed is None]
        if len(set(whole)) != len(whole):
            return f"{claim.name}: a device twice"
        if not constraints_hold(claim, picks):
            return f"{claim.name}: a constraint does not hold"
        everyone.extend(picks)
    dedicated = [p.key for p in everyone if not p.admin and p.consumed is None]
    if len(set(dedicated)) != len(dedicated):
        return "a device shared between claims"
    problem = _capacity_holds(pools, everyone)
    if problem is not None:
        return problem
    if not counters_hold(pools, held, everyone):
        return "counters exceeded"
    return None


def _shared(reach: Reach) -> bool:
    assert reach.device.state is not None
    return reach.device.state.device.get("allowMultipleAllocations") is True


def _capacity_holds(pools: Pools, picks: Sequence[Pick]) -> str | None:
    """Every share consumes each capacity of its device (an amount the value can hold), and
    the shares, stored and new, of a device stay within its values."""
    used: dict[tuple[Any, ...], dict[str, int]] = {}
    for state in pools.states.values():
        for name, amounts in state.shared.items():
            used[(state.key[0], state.key[1], name)] = {k: v for k, v in amounts.items() if k}
    for pick in picks:
        if pick.consumed is None:
            continue
        assert pick.reach.device.state is not None
        capacity = pick.reach.device.state.device.get("capacity") or {}
        if {k for k, _ in pick.consumed} != set(capacity):
            return f"{pick.key}: consumedCapacity does not name every capacity"
        entry = used.setdefault(pick.key, {})
        for name, amount in pick.consumed:
            entry[name] = entry.get(name, 0) + amount
            if entry[name] > parse(str(capacity[name]["value"])).nanos:
                return f"{pick.key}: {name} over its value"
    return None


def _combinations(
    claim: Claim,
    ri: int,
    pool: list[Reach],
    classes: Mapping[str, JSON],
    held: set[Any],
    others: set[Any],
    mine: set[Any],
) -> Iterator[list[Pick]]:
    """Every way to give the claim's requests from ``ri`` on their devices: none twice in the
    claim, none that other claims took (admin access excepted)."""
    if ri == len(claim.requests):
        yield []
        return
    for alternative in claim.requests[ri].alternatives:
        options = [r for r in pool if eligible(alternative, r, classes, held)]
        if alternative.all:
            options = [r for r in pool if eligible(alternative, r, classes, set())]
            if not options or any(
                not alternative.admin
                and (r.pool.gathered.driver, r.pool.gathered.pool, r.device.name) in held
                for r in options
            ):
                continue
            sizes: Sequence[tuple[Reach, ...]] = [tuple(options)]
        else:
            sizes = list(itertools.combinations(options, alternative.count))
        for chosen in sizes:
            keys = {(r.pool.gathered.driver, r.pool.gathered.pool, r.device.name) for r in chosen}
            if keys & mine or (not alternative.admin and keys & others):
                continue
            picks = [Pick(alternative.name, r, alternative.admin) for r in chosen]
            for rest in _combinations(claim, ri + 1, pool, classes, held, others, mine | keys):
                yield picks + rest


def brute_force(
    pools: Pools, classes: Mapping[str, JSON], node: Node, claims: Sequence[Claim], held: set[Any]
) -> bool:
    """Is there any valid allocation of every claim? Every combination, checked."""
    reachable = pools.reachable(node)

    def solve(ci: int, used: list[Pick]) -> bool:
        if ci == len(claims):
            return counters_hold(pools, held, used)
        claim = claims[ci]
        taken = {p.key for p in used if not p.admin}
        for picks in _combinations(claim, 0, reachable, classes, held, taken, set()):
            if len(picks) > 32 or not constraints_hold(claim, picks):
                continue
            if solve(ci + 1, used + picks):
                return True
        return False

    return solve(0, [])


def answer(result: NodeResult) -> tuple[Any, ...]:
    """What two allocators' answers for one node must agree on: node, feasibility, score,
    each claim's allocation and the reasons."""
    return (
        result.node,
        result.feasible,
        result.score,
        [c.allocation for c in result.claims],
        result.reasons,
    )

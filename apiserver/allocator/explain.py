"""Explanations: why a node is infeasible, as ``reasons.Reason`` values with counts.

An ``Explainer`` reads what a finished search left behind (the plans: which constraints
rejected devices, which counters or capacity ran out) and, per request alternative, sorts
its candidates on the node by what took them (held by an allocation or a reservation,
counters or capacity used up, free) beside what the planner's tally removed before the
search (class, selectors, unusable pools, taints, capacity). Built only when a result's
reasons are first read (``outcome.NodeResult.explanations``): most never are.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from ..api.resource import DeviceID
from ..pools import Node, Pools, PoolState, fits
from .candidates import Tally
from .claims import MAX_DEVICES_PER_CLAIM, Claim
from .ledger import Ledger
from .planning import Planner
from .reasons import (
    CAPACITY_EXHAUSTED,
    CONSTRAINT_UNSATISFIABLE,
    COUNTERS_EXHAUSTED,
    NO_CANDIDATES,
    NO_MATCHING_DEVICES,
    POOL_UNUSABLE,
    TOO_MANY_DEVICES,
    UNSATISFIABLE,
    Reason,
)
from .search import AlternativePlan, ClaimPlan


@dataclass(slots=True)
class _Sorted:
    """An alternative's candidates on a node, counted by what took them."""

    allocated: int = 0
    reserved: int = 0
    exhausted: int = 0
    """Counters exhausted."""
    used_up: int = 0
    """Capacity exhausted."""
    free: int = 0


class Explainer:
    def __init__(self, pools: Pools, planner: Planner, ledger: Ledger) -> None:
        self.pools = pools
        self.planner = planner
        self.ledger = ledger

    def explain(
        self, plans: list[ClaimPlan], node: Node, held: Collection[DeviceID]
    ) -> list[Reason]:
        """Why the search found no devices for the claims together on the node."""
        reasons: list[Reason] = []
        for plan in plans:
            if not plan.fixed:
                reasons.extend(self._claim(plan, node, held))
        if not reasons:
            reasons.append(
                Reason(
                    UNSATISFIABLE,
                    "",
                    "the claims cannot all be satisfied together: each can be alone, but not"
                    " without sharing a device"
                    if len(plans) > 1
                    else "no combination of candidates satisfies the claim",
                )
            )
            for plan in plans:
                for request in plan.requests:
                    for alt in request.alternatives:
                        line = self.shortage(plan.claim.name, alt, node, held, always=True)
                        if line is not None:
                            reasons.append(line)
        return reasons

    def _claim(self, plan: ClaimPlan, node: Node, held: Collection[DeviceID]) -> list[Reason]:
        """One claim's reasons: requests short of free candidates when there are any, else
        the constraints and limits that rejected every combination."""
        name = plan.claim.name
        reasons: list[Reason] = []
        short = False
        for request in plan.requests:
            lines = [self.shortage(name, a, node, held) for a in request.alternatives]
            if all(line is not None for line in lines):
                short = True
                reasons.extend(line for line in lines if line is not None)
        if short:
            return reasons
        for constraint in plan.constraints:
            if constraint.rejections:
                among = len(
                    {
                        c.id
                        for r in plan.requests
                        for a in r.alternatives
                        if constraint in a.constraints
                        for g in a.groups
                        for c in g.members
                        if a.alternative.admin or c.id not in held
                    }
                )
                error = getattr(constraint, "error", None)
                reasons.append(
                    Reason(
                        CONSTRAINT_UNSATISFIABLE,
                        name,
                        f"claim {name}: {constraint.label} unsatisfiable among {among}"
                        " candidates" + (f" (last error: {error})" if error else ""),
                        counts={"candidates": among},
                    )
                )
        return reasons + _limits(plan)

    def short(
        self, claim: str, plan: AlternativePlan, node: Node, taken: Collection[DeviceID]
    ) -> tuple[Reason, ...]:
        line = self.shortage(claim, plan, node, taken)
        return (line,) if line else ()

    def shortage(
        self,
        claim: str,
        alt: AlternativePlan,
        node: Node,
        held: Collection[DeviceID],
        always: bool = False,
    ) -> Reason | None:
        """Why the alternative cannot have its devices on the node, counted; None if it has
        enough free candidates (the reason is then elsewhere) unless ``always``."""
        alternative = alt.alternative
        tally = self.planner.filtered.get((node.key, alternative.key))
        if tally is None:
            tally = self.planner.tally(Claim(claim), alternative, node)
        counted = self._sort(alt, held)
        where = f"claim {claim} request {alternative.name}"

        def reason(code: str, message: str, **counts: int) -> Reason:
            return Reason(code, claim, f"{where}: {message}", alternative.name, counts)

        if alternative.all:
            if not alt.usable:
                pools = ", ".join(f"{d}/{p}" for d, p in sorted(tally.unusable_pools))
                return reason(
                    POOL_UNUSABLE,
                    f"asks for all devices, but pool {pools} is incomplete or invalid",
                    pools=len(tally.unusable_pools),
                )
            if counted.free == alt.count and counted.free > 0 and not always:
                return None
            if alt.count == 0:
                return reason(
                    NO_CANDIDATES,
                    f"asks for all devices, and none is reachable from node {node.name}",
                    reachable=tally.reachable,
                )
        elif counted.free >= alternative.count and not always:
            return None
        if tally.reachable == tally.class_excluded and not tally.unusable_pools:
            return reason(
                NO_CANDIDATES,
                f"no device of class {alternative.class_name} is reachable from node {node.name}",
                reachable=tally.reachable,
                classExcluded=tally.class_excluded,
            )
        counts = _counts(alt, tally, counted)
        needs = "all" if alternative.all else str(alternative.count)
        parts = self._parts(tally, counted)
        return reason(
            _shortage_code(counts),
            f"needs {needs} device(s) of class {alternative.class_name}, {counted.free} free"
            f" on node {node.name}" + (": " + "; ".join(parts) if parts else ""),
            **counts,
        )

    def _sort(self, alt: AlternativePlan, held: Collection[DeviceID]) -> _Sorted:
        """The alternative's candidates counted by what took them."""
        alternative = alt.alternative
        out = _Sorted()
        for candidate in (c for g in alt.groups for c in g.members):
            if not alternative.admin and candidate.id in held:
                # This allocator's pool state: a candidate may come from a shared cache made
                # when other devices were allocated (``shared``).
                pool: PoolState = self.pools.pool(candidate.pool.key) or candidate.pool
                if candidate.id.device in pool.allocated:
                    out.allocated += 1
                else:
                    out.reserved += 1
            elif candidate.shared and not self.planner.fits(alternative, candidate):
                out.used_up += 1
            elif (
                candidate.consumes
                and candidate.id not in self.ledger.consumed
                and not fits(candidate.consumes, self.ledger.remaining(candidate.pool.key))
            ):
                out.exhausted += 1
            else:
                out.free += 1
        return out

    def _parts(self, tally: Tally, counted: _Sorted) -> list[str]:
        """What removed the candidates, for the message: each cause with its count."""
        parts = []
        for (driver, pool_name), count in sorted(tally.unusable_pools.items()):
            state = self.pools.pool((driver, pool_name))
            why = "incomplete" if state is not None and state.gathered.incomplete else "invalid"
            parts.append(f"pool {driver}/{pool_name} {why} ({count} devices)")
        for i, count in sorted(tally.selector_excluded.items()):
            error = tally.selector_errors.get(i)
            parts.append(
                f"selector #{i} excluded {count}" + (f" (error: {error})" if error else "")
            )
        for label, count in (
            ("tainted", tally.tainted),
            ("capacity insufficient", tally.capacity_short),
            ("allocated", counted.allocated),
            ("reserved", counted.reserved),
            ("counters exhausted", counted.exhausted),
            ("capacity exhausted", counted.used_up),
        ):
            if count:
                parts.append(f"{label} {count}")
        return parts


def about(reason: Reason, claim: str, request: str) -> Reason:
    """A shortage reason (``Explainer.short``) told of another claim of the same shape on
    the same node, whose request may have another name: its message names the claim and
    the request first, the rest is the same."""
    if (reason.claim, reason.request) == (claim, request):
        return reason
    told = f"claim {reason.claim} request {reason.request}: "
    if reason.request is None or not reason.message.startswith(told):
        raise ValueError(f"not a shortage reason: {reason.message!r}")
    message = f"claim {claim} request {request}: {reason.message[len(told) :]}"
    return Reason(reason.code, claim, message, request, reason.counts)


def _counts(alt: AlternativePlan, tally: Tally, counted: _Sorted) -> dict[str, int]:
    """A short request's counts, as its ``Reason`` carries them."""
    return {
        "needed": alt.count if alt.alternative.all else alt.alternative.count,
        "free": counted.free,
        "reachable": tally.reachable,
        "classExcluded": tally.class_excluded,
        "selectorExcluded": sum(tally.selector_excluded.values()),
        "unusablePools": sum(tally.unusable_pools.values()),
        "tainted": tally.tainted,
        "capacityInsufficient": tally.capacity_short,
        "allocated": counted.allocated,
        "reserved": counted.reserved,
        "countersExhausted": counted.exhausted,
        "capacityExhausted": counted.used_up,
    }


def _limits(plan: ClaimPlan) -> list[Reason]:
    """The limits that rejected every combination of the claim's candidates."""
    name = plan.claim.name
    reasons = []
    if plan.counter_rejections:
        reasons.append(
            Reason(
                COUNTERS_EXHAUSTED,
                name,
                f"claim {name}: counters exhausted: no combination of candidates fits"
                " the counters their pools have left",
            )
        )
    if plan.capacity_rejections:
        reasons.append(
            Reason(
                CAPACITY_EXHAUSTED,
                name,
                f"claim {name}: capacity exhausted: no combination of candidates fits"
                " the capacity their shared devices have left",
            )
        )
    if plan.oversized:
        reasons.append(
            Reason(
                TOO_MANY_DEVICES,
                name,
                f"claim {name}: the devices requested exceed the claim limit of"
                f" {MAX_DEVICES_PER_CLAIM}",
                counts={"limit": MAX_DEVICES_PER_CLAIM},
            )
        )
    return reasons


def _shortage_code(counts: Mapping[str, int]) -> str:
    """The code of a request short of free candidates: NoMatchingDevices when the selectors
    alone left none (nothing else removed any, so freeing devices cannot help); else what
    took the candidates, counters and capacity first as they say most."""
    others = ("unusablePools", "tainted", "capacityInsufficient", "allocated", "reserved")
    if (
        counts["selectorExcluded"]
        and counts["free"] == 0
        and counts["countersExhausted"] == 0
        and counts["capacityExhausted"] == 0
        and not any(counts[k] for k in others)
    ):
        return NO_MATCHING_DEVICES
    if counts["countersExhausted"]:
        return COUNTERS_EXHAUSTED
    if counts["capacityExhausted"] or counts["capacityInsufficient"]:
        return CAPACITY_EXHAUSTED
    return UNSATISFIABLE

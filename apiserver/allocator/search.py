"""The search: exhaustive depth-first with backtracking over plain in-memory plans.

Order, as upstream: claims in the given order, requests in order, for ``firstAvailable``
the subrequests in order (the first that leads to a full solution is kept), then devices.
Within a request the devices are a combination, not a permutation: the next device comes
from the same group as the previous one or a later group, so each set of devices is tried
once. Groups hold interchangeable devices (``candidates``), so a set of groups with
multiplicities stands for every set of devices it can be made of: that is sound, because
swapping interchangeable devices cannot change any outcome. Groups are ordered by KEP-5007
rank, so the first solution prefers node-local devices, then attached fabric devices, then
fabric devices that need attaching.

Each pick checks, cheapest first: the device is not held (allocated or reserved, unless the
request has admin access) nor chosen already (by another claim of this search, or by this
claim), its counters fit what its pool has left (admin access consumes none, as it takes
nothing from others), and every constraint covering the request accepts it (``add``); a CEL constraint is evaluated only when its last request is complete.
Whatever fails is undone (``remove``, counters given back) and the next group is tried.
When every alternative of a request would take the claim past 32 results, the search
backs up to the nearest earlier request with another alternative, as upstream does: which
devices the earlier requests took cannot change how many the claim holds.

A device that allows multiple allocations (``Candidate.shared``) is never held by a share:
other requests, of this claim or another, may pick it again while its capacity lasts
(``api.resource.capacity.share`` against what stored shares and this search's picks
consume); one request never picks it twice. Its counters are consumed by its first share
only, and given back with its last.

``Search.run`` is a generator: it yields every ``Budget.chunk`` steps, every
``EVALUATIONS_PER_CHUNK`` CEL constraint evaluations and after ``SLICE`` seconds of work,
so a caller on an event loop can let other tasks run between chunks, and a plain caller just exhausts it. It
raises ``GaveUp`` when the budget of steps, CEL evaluations or seconds is spent.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass, field

from ..api.resource import DeviceID, share
from .candidates import Candidate, Group
from .claims import MAX_DEVICES_PER_CLAIM, Alternative, Claim
from .constraints import Constraint, Evaluations


@dataclass(frozen=True)
class Budget:
    steps: int = 1_000_000
    """Devices tried, over the whole search (a group without a free member is no step)."""
    evaluations: int = 100_000
    """CEL constraint evaluations."""
    seconds: float = 5.0
    chunk: int = 512
    """Steps between two yields of ``Search.run`` (and two looks at the clock)."""


EVALUATIONS_PER_CHUNK = 16
"""CEL constraint evaluations between two pauses of ``Search.run``."""
SLICE = 0.002
"""Seconds of work after which ``Search.run`` pauses even before a chunk is done (steps
that check partial sets cost far more than plain ones); the clock is read every
``CLOCK_EVERY`` steps."""
CLOCK_EVERY = 8


class GaveUp(Exception):
    """The budget ran out before the search could say yes or no."""


class _Oversized(Exception):
    """Every alternative of a request would take the claim past the result limit. How many
    devices a claim takes depends only on the alternatives chosen, never on which devices,
    so other devices for the earlier requests cannot help: the search goes back to the
    nearest earlier request that still has another alternative (as upstream does), and a
    claim that runs out of them fails without re-trying its device combinations."""


@dataclass
class AlternativePlan:
    alternative: Alternative
    groups: list[Group]
    """Candidates on this node, grouped; empty when the alternative cannot be served."""
    count: int
    """Devices needed (for ``All``: every candidate)."""
    constraints: list[Constraint] = field(default_factory=list)
    usable: bool = True
    """False when the alternative can never succeed here (``All`` over an unusable pool)."""


@dataclass
class RequestPlan:
    name: str
    alternatives: list[AlternativePlan]


@dataclass
class ClaimPlan:
    claim: Claim
    requests: list[RequestPlan]
    constraints: list[Constraint]
    fixed: bool = False
    """Already allocated: nothing to search."""
    picks: list[tuple[Alternative, Candidate]] = field(default_factory=list)
    shares: list[dict[str, int] | None] = field(default_factory=list)
    """Beside each pick: what it consumes of a shared device's capacity (None: dedicated)."""
    counted: list[bool] = field(default_factory=list)
    """Beside each pick: whether it consumed the device's counters."""
    picked: set[DeviceID] = field(default_factory=set)
    oversized: bool = False
    counter_rejections: int = 0
    capacity_rejections: int = 0


Usage = dict[tuple[tuple[str, str], str, str], int]
"""Counter consumption: ((driver, pool), counter set, counter) -> amount in nano units."""

Consumed = dict[DeviceID, dict[str, int]]
"""Per shared device in use: capacity name -> amount its shares consume (nano units), and
under the empty name how many shares there are."""


def take_share(consumed: Consumed, device: DeviceID, amounts: dict[str, int], sign: int) -> None:
    """Add (``sign`` 1) or give back (-1) one share; the device drops out with its last."""
    entry = consumed.setdefault(device, {})
    entry[""] = entry.get("", 0) + sign
    for name, amount in amounts.items():
        entry[name] = entry.get(name, 0) + sign * amount
    if entry[""] <= 0:
        del consumed[device]


class Search:
    def __init__(
        self,
        plans: list[ClaimPlan],
        held: set[DeviceID] | frozenset[DeviceID],
        used: Usage,
        limits: Usage,
        budget: Budget,
        evaluations: Evaluations,
        consumed: Consumed | None = None,
    ) -> None:
        self.plans = plans
        self.held = held
        self.used = used
        """Shared with the held ledger (``ledger``): what is consumed now; the search restores
        what it adds."""
        self.consumed: Consumed = consumed if consumed is not None else {}
        """Shared with the held ledger, likewise: the capacity shares of devices consume."""
        self.limits = limits
        self.budget = budget
        self.evaluations = evaluations
        self.chosen: set[DeviceID] = set()
        self.steps = 0
        self._deadline = 0.0
        self._next_pause = EVALUATIONS_PER_CHUNK
        self._slice_end = time.perf_counter() + SLICE

    def run(self) -> Generator[None, None, bool]:
        self._deadline = time.perf_counter() + self.budget.seconds
        found = yield from self._claim(0)
        return found

    # -- levels ----------------------------------------------------------------------

    def _claim(self, ci: int) -> Generator[None, None, bool]:
        if ci == len(self.plans):
            return True
        plan = self.plans[ci]
        if plan.fixed:
            return (yield from self._claim(ci + 1))
        try:
            return (yield from self._request(ci, 0))
        except _Oversized:
            return False

    def _request(self, ci: int, ri: int) -> Generator[None, None, bool]:
        plan = self.plans[ci]
        if ri == len(plan.requests):
            return (yield from self._claim(ci + 1))
        oversized = bool(plan.requests[ri].alternatives)
        for alt in plan.requests[ri].alternatives:
            if not alt.usable or (alt.alternative.all and alt.count == 0):
                oversized = False
                continue
            if len(plan.picks) + alt.count > MAX_DEVICES_PER_CLAIM:
                plan.oversized = True
                continue
            try:
                if (yield from self._device(ci, ri, alt, alt.count, 0)):
                    return True
            except _Oversized:
                continue
            oversized = False
        if oversized:
            raise _Oversized
        return False

    def _device(
        self, ci: int, ri: int, alt: AlternativePlan, need: int, start: int
    ) -> Generator[None, None, bool]:
        plan = self.plans[ci]
        if need == 0:
            complete = all(constraint.complete(ri) for constraint in plan.constraints)
            if self.evaluations.count > self.budget.evaluations:
                raise GaveUp(f"budget exhausted: {self.evaluations.count} CEL evaluations")
            if self.evaluations.count >= self._next_pause:
                # A CEL evaluation costs a hundred steps or so: pause by evaluations too.
                self._next_pause = self.evaluations.count + EVALUATIONS_PER_CHUNK
                self._check_budget()
                yield
                self._slice_end = time.perf_counter() + SLICE
            if not complete:
                return False
            return (yield from self._request(ci, ri + 1))
        groups = alt.groups
        for gi in range(start, len(groups)):
            group = groups[gi]
            candidate = self._free_member(plan, alt.alternative, group)
            if candidate is None:
                continue
            self.steps += 1
            if self.steps % self.budget.chunk == 0 or (
                self.steps % CLOCK_EVERY == 0 and time.perf_counter() > self._slice_end
            ):
                self._check_budget()
                yield
                self._slice_end = time.perf_counter() + SLICE
            if not self._add(plan, alt, group, candidate):
                if alt.alternative.all:
                    return False
                continue
            # A shared device stays free after a pick: the next one starts past it.
            try:
                found = yield from self._device(
                    ci, ri, alt, need - 1, gi + 1 if candidate.shared else gi
                )
            except _Oversized:
                self._undo(plan, alt, group, candidate)
                raise
            if found:
                return True
            self._undo(plan, alt, group, candidate)
            if alt.alternative.all:
                return False
        return False

    # -- one device ------------------------------------------------------------------

    def _free_member(self, plan: ClaimPlan, alt: Alternative, group: Group) -> Candidate | None:
        for candidate in group.members:
            cid = candidate.id
            if cid in plan.picked:
                continue
            if not alt.admin and (cid in self.held or cid in self.chosen):
                continue
            return candidate
        return None

    def _add(self, plan: ClaimPlan, alt: AlternativePlan, group: Group, cand: Candidate) -> bool:
        amounts = None
        first = True
        if cand.shared:
            in_use = self.consumed.get(cand.id)
            amounts = share(alt.alternative.capacity, cand.capacities, in_use)
            if amounts is None:
                plan.capacity_rejections += 1
                return False
            first = in_use is None
        # Admin access takes nothing from others, its counters included; a shared device's
        # counters are taken by its first share.
        counts = bool(cand.consumes) and not alt.alternative.admin and first
        if counts and not self._consume(cand):
            plan.counter_rejections += 1
            return False
        for i, constraint in enumerate(alt.constraints):
            if not constraint.add(group, cand):
                for earlier in alt.constraints[:i]:
                    earlier.remove(group, cand)
                if counts:
                    self._give_back(cand)
                return False
        plan.picks.append((alt.alternative, cand))
        plan.shares.append(amounts)
        plan.counted.append(counts)
        if amounts is not None:
            take_share(self.consumed, cand.id, amounts, 1)
        else:
            plan.picked.add(cand.id)
            if not alt.alternative.admin:
                self.chosen.add(cand.id)
        return True

    def _undo(self, plan: ClaimPlan, alt: AlternativePlan, group: Group, cand: Candidate) -> None:
        for constraint in reversed(alt.constraints):
            constraint.remove(group, cand)
        plan.picks.pop()
        amounts = plan.shares.pop()
        if plan.counted.pop():
            self._give_back(cand)
        if amounts is not None:
            take_share(self.consumed, cand.id, amounts, -1)
        else:
            plan.picked.discard(cand.id)
            if not alt.alternative.admin:
                self.chosen.discard(cand.id)

    def release(self, plan: ClaimPlan) -> None:
        """Give back what a finished search's picks still take (counters and capacity); the
        picks stay in the plan only for the answer."""
        for (_, cand), amounts, counted in zip(plan.picks, plan.shares, plan.counted, strict=True):
            if counted:
                self._give_back(cand)
            if amounts is not None:
                take_share(self.consumed, cand.id, amounts, -1)

    def _consume(self, cand: Candidate) -> bool:
        pool = cand.pool.key
        used, limits = self.used, self.limits
        for set_name, amounts in cand.consumes:
            for counter, amount in amounts:
                key = (pool, set_name, counter)
                limit = limits.get(key)
                if limit is None or (amount > 0 and used.get(key, 0) + amount > limit):
                    return False
        for set_name, amounts in cand.consumes:
            for counter, amount in amounts:
                key = (pool, set_name, counter)
                used[key] = used.get(key, 0) + amount
        return True

    def _give_back(self, cand: Candidate) -> None:
        pool = cand.pool.key
        for set_name, amounts in cand.consumes:
            for counter, amount in amounts:
                key = (pool, set_name, counter)
                self.used[key] -= amount

    def _check_budget(self) -> None:
        budget = self.budget
        if self.steps >= budget.steps:
            raise GaveUp(f"budget exhausted: {self.steps} steps")
        if self.evaluations.count >= budget.evaluations:
            raise GaveUp(f"budget exhausted: {self.evaluations.count} CEL evaluations")
        if time.perf_counter() > self._deadline:
            raise GaveUp(f"budget exhausted: {budget.seconds:g}s after {self.steps} steps")

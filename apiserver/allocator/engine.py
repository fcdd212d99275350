"""The allocator's entry point: claims and candidate nodes in, one result per node out.

    allocator = Allocator(pools, classes)            # pools: apiserver.pools.Pools snapshot
    claims = [parse_claim("ns/name", claim_json)]    # ResourceClaim or ResourceClaimSpec JSON
    result = allocator.allocate(claims, Node("node-1", {"zone": "a"}))
    results = await allocator.review(claims, nodes)  # per node, on an event loop, one budget

An ``Allocator`` is made from one ``Pools`` snapshot (gathered pools, allocated and
reserved devices, and what shares of multi-allocatable devices consume) and the DeviceClasses
by name; ``reserved`` adds devices held elsewhere (whole). ``hold``/``release`` take devices
(and their counters) in and out of what is held, so a caller that commits one allocation
after another keeps one allocator (the pool index's reservations do the same for pool
status). Each call searches claims jointly on one node (no device shared between them but
those that allow multiple allocations, while their capacity lasts; a claim that is already
allocated keeps its allocation, its dedicated devices are taken and its shares stay
counted) and answers a ``NodeResult``: feasible or not, a score (see
``result``), per claim the upstream AllocationResult, and when infeasible, reasons naming
the claim, the request and what removed the candidates, with counts.

No I/O, no API types inside the loop: the search (``search``) runs over candidates
(``candidates``) and constraints (``constraints``) built here. Caches (on unless
``caches=False``): candidates per device version, selector results per device version,
each node's filtered and grouped candidates per request alternative, CEL constraint results
per set of device signatures. ``symmetry=False`` turns off grouping of interchangeable
devices, ``prune=False`` the three-valued checks of partial sets against CEL constraints
(``partial``): benchmarks compare the engine with all three off, in the same run.

Event loop: ``allocate`` runs the search to the end; ``review`` runs it in chunks (see
``search``) and yields to the event loop between chunks, and between nodes once a slice of
time has passed, so a long search never holds the loop for more than one chunk (bench/RESULTS.md measures the
longest stall). A budget of steps, CEL evaluations and seconds ends a search with the
reason "budget exhausted", never a hang; ``review`` shares one budget over all its nodes
(``budget``), so a review's work does not grow with its number of nodes, and answers the
nodes it had no budget left for "not searched".
"""

from __future__ import annotations

import asyncio
import functools
import time
import weakref
from collections.abc import Callable, Collection, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..api.resource import DeviceID, share
from ..cel import CELError, Program, compile_constraint, compile_selector
from ..pools import Node, PoolKey, Pools, PoolState, fits, selector_matches
from ..toolkit import JSON
from .budget import ReviewBudget
from .candidates import Candidate, Group, SelectorCache, Tally, filter_candidates, group
from .claims import MAX_DEVICES_PER_CLAIM, Alternative, Claim, ConstraintSpec
from .constraints import (
    CelConstraint,
    Constraint,
    DistinctAttribute,
    Evaluations,
    MatchAttribute,
)
from .reasons import (
    ALLOCATED_ELSEWHERE,
    BUDGET_EXHAUSTED,
    CAPACITY_EXHAUSTED,
    CONSTRAINT_UNSATISFIABLE,
    COUNTERS_EXHAUSTED,
    INVALID_CLAIM,
    NO_CANDIDATES,
    NO_MATCHING_DEVICES,
    NOT_SEARCHED,
    POOL_UNUSABLE,
    TOO_MANY_DEVICES,
    UNSATISFIABLE,
    Reason,
)
from .result import allocation_result, score
from .search import (
    SLICE,
    AlternativePlan,
    Budget,
    ClaimPlan,
    Consumed,
    GaveUp,
    RequestPlan,
    Search,
    Usage,
)


@dataclass
class ClaimOutcome:
    claim: Claim
    picks: tuple[tuple[Alternative, Candidate], ...] = ()
    node: str = ""
    classes: Mapping[str, JSON] = field(default_factory=dict, repr=False, compare=False)
    shares: tuple[dict[str, int] | None, ...] = ()
    """Beside each pick: what it consumes of a shared device (None for a dedicated one)."""

    @property
    def name(self) -> str:
        return self.claim.name

    @property
    def devices(self) -> tuple[DeviceID, ...]:
        """The devices newly chosen for the claim, admin-access ones excepted (what to hold)."""
        return tuple(c.id for a, c in self.picks if not a.admin)

    @functools.cached_property
    def allocation(self) -> JSON | None:
        """Upstream AllocationResult (the existing one for a claim that was allocated
        already), built when first read: most nodes of a review are never bound to."""
        if self.claim.allocation is not None:
            return self.claim.allocation
        return allocation_result(self.claim, list(self.picks), self.classes, self.node, self.shares)


@dataclass
class NodeResult:
    node: str
    feasible: bool
    score: int = 0
    claims: tuple[ClaimOutcome, ...] = ()
    why: tuple[Reason, ...] | Callable[[], tuple[Reason, ...]] = ()
    """The reasons, or how to build them when first read (most are never read)."""
    steps: int = 0
    evaluations: int = 0
    """CEL constraint evaluations the search made."""
    partial_checks: int = 0
    """Three-valued checks of partial sets against CEL constraints (``partial``)."""

    @property
    def devices(self) -> tuple[DeviceID, ...]:
        return tuple(d for c in self.claims for d in c.devices)

    @functools.cached_property
    def explanations(self) -> tuple[Reason, ...]:
        """Why the node is infeasible: each a code, the claim, the request and what removed
        its candidates, with counts."""
        return self.why() if callable(self.why) else self.why

    @property
    def reasons(self) -> tuple[str, ...]:
        """The explanations' messages, for people and logs."""
        return tuple(r.message for r in self.explanations)


class _Problem(Exception):
    """A claim that cannot be searched at all (unknown class, a selector that does not
    compile): the same answer on every node."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(reason.message)
        self.reason = reason


class Allocator:
    def __init__(
        self,
        pools: Pools,
        classes: Mapping[str, JSON],
        *,
        reserved: Iterable[DeviceID] = (),
        budget: Budget | None = None,
        symmetry: bool = True,
        caches: bool = True,
        prune: bool = True,
    ) -> None:
        self.pools = pools
        self.classes = classes
        self.budget = budget or Budget()
        self.symmetry = symmetry
        self.caches = caches
        self.selectors = SelectorCache(caches)
        self.prune = prune
        self._memo: dict[tuple[str, tuple[int, ...]], bool | str] | None = {} if caches else None
        self._refuted: dict[tuple[str, tuple[int, ...], int], bool] | None = {} if caches else None
        self._signatures: dict[Any, int] = {}
        self._candidates: dict[int, Candidate] = {}
        self._binding_pools: dict[int, bool] = {}
        self._filtered: dict[tuple[str, tuple[Any, ...]], Tally] = {}
        self._grouped: dict[tuple[str, tuple[Any, ...]], list[Group]] = {}
        self._free: dict[tuple[str, tuple[Any, ...]], _Free] = {}
        self.reserved: set[DeviceID] = set(reserved)
        self._ledger: _Ledger | None = None
        """What is held and consumed, made when first needed (``ledger``)."""
        self._touched: set[PoolKey] = {(d.driver, d.pool) for d in self.reserved}
        """Pools where this allocator holds or released devices the snapshot does not say."""

    # -- holding ---------------------------------------------------------------------

    @property
    def ledger(self) -> _Ledger:
        """What the snapshot's allocations, reservations and shares hold and consume (once
        per snapshot, see ``pool_usage``), then ``reserved`` and what ``hold`` and
        ``release`` changed; made on first use: a review answered from the free
        candidates of each node (``_free_candidates``) never needs it."""
        if self._ledger is None:
            usage = pool_usage(self.pools)
            self._ledger = _Ledger(
                set(usage.held),
                dict(usage.limits),
                dict(usage.used),
                {device: dict(amounts) for device, amounts in usage.consumed},
            )
            self._take(self.reserved)
        return self._ledger

    @property
    def held(self) -> set[DeviceID]:
        return self.ledger.held

    @property
    def limits(self) -> Usage:
        return self.ledger.limits

    @property
    def used(self) -> Usage:
        return self.ledger.used

    @property
    def consumed(self) -> Consumed:
        """What the shares of multi-allocatable devices consume (see ``search.Consumed``)."""
        return self.ledger.consumed

    def hold(self, devices: Iterable[DeviceID]) -> None:
        """Take devices (an allocation committed or reserved): later searches skip them and
        their counters count as consumed."""
        devices = list(devices)
        self._touched.update((d.driver, d.pool) for d in devices)
        if self._ledger is not None:
            self._take(devices)
        else:
            self.reserved.update(devices)  # taken when the ledger is made

    def _take(self, devices: Iterable[DeviceID]) -> None:
        held = self.ledger.held
        for device in devices:
            if device not in held:
                held.add(device)
                self._count(device, 1)

    def release(self, devices: Iterable[DeviceID]) -> None:
        held = self.ledger.held
        for device in devices:
            self._touched.add((device.driver, device.pool))
            if device in held:
                held.discard(device)
                self._count(device, -1)

    def _count(self, device: DeviceID, sign: int) -> None:
        state = self.pools.pool((device.driver, device.pool))
        facts = state.gathered.devices.get(device.device) if state is not None else None
        if state is None or facts is None:
            return
        for set_name, amounts in facts.consumes:
            for counter, amount in amounts:
                key = (state.key, set_name, counter)
                if key in self.limits:
                    self.used[key] = self.used.get(key, 0) + sign * amount

    # -- entry points ----------------------------------------------------------------

    def allocate(self, claims: Sequence[Claim], node: Node) -> NodeResult:
        """The claims on one node, searched to the end (or until the budget is spent)."""
        steps = self.search(claims, node)
        try:
            while True:
                next(steps)
        except StopIteration as done:
            result: NodeResult = done.value
            return result

    async def review(
        self,
        claims: Sequence[Claim],
        nodes: Sequence[Node],
        budget: ReviewBudget | None = None,
    ) -> list[NodeResult]:
        """The claims on each node, yielding to the event loop between chunks of the search
        and between nodes. One budget serves every node (``budget``, by default this
        allocator's ``Budget`` for the whole call): each node's search gets a share, and
        once it is spent the remaining nodes are answered "not searched". Cancelling the
        calling task stops the search at its next pause."""
        budget = budget if budget is not None else ReviewBudget(self.budget)
        out: list[NodeResult] = []
        paused = time.perf_counter()
        for i, node in enumerate(nodes):
            if budget.exhausted:
                out.extend(_not_searched(n, budget) for n in nodes[i:])
                break
            quick = self._quick(claims, node)
            if quick is not None:
                out.append(quick)
                budget.spend(quick.steps, 0)
            else:
                steps = self._search(claims, node, budget.share(len(nodes) - i))
                try:
                    while True:
                        next(steps)
                        await asyncio.sleep(0)
                        paused = time.perf_counter()
                except StopIteration as done:
                    result: NodeResult = done.value
                    out.append(result)
                    budget.spend(result.steps, result.evaluations)
            if time.perf_counter() - paused > SLICE:  # most nodes take microseconds
                await asyncio.sleep(0)
                paused = time.perf_counter()
        return out

    def search(
        self, claims: Sequence[Claim], node: Node, budget: Budget | None = None
    ) -> Generator[None, None, NodeResult]:
        """The search as a generator that yields every ``Budget.chunk`` steps, bounded by
        ``budget`` (this allocator's by default)."""
        quick = self._quick(claims, node)
        if quick is not None:
            return quick
        return (yield from self._search(claims, node, budget))

    def _quick(self, claims: Sequence[Claim], node: Node) -> NodeResult | None:
        """The answer without a search: an allocated claim whose allocation does not reach
        the node, or what ``_greedy`` finds; None when it takes a search."""
        for claim in claims:
            if not _allocation_reaches(claim, node):
                return NodeResult(
                    node.name,
                    False,
                    why=(
                        Reason(
                            ALLOCATED_ELSEWHERE,
                            claim.name,
                            f"claim {claim.name}: allocated already, and its allocation is not "
                            f"available on node {node.name}",
                        ),
                    ),
                )
        return self._greedy(claims, node)

    def _search(
        self, claims: Sequence[Claim], node: Node, budget: Budget | None
    ) -> Generator[None, None, NodeResult]:
        evaluations = Evaluations(self._memo, self._refuted)
        try:
            plans = [self._plan(claim, node, evaluations) for claim in claims]
        except _Problem as problem:
            return NodeResult(node.name, False, why=(problem.reason,))
        held = self.held
        # An allocated claim's devices are taken whole; its shares of multi-allocatable
        # devices are in what the pools' shares consume already.
        fixed = [
            r.id
            for p in plans
            if p.fixed
            for r in p.claim.allocated
            if not r.admin_access and not r.shared
        ]
        if fixed:
            held = held | set(fixed)
        search = Search(
            plans, held, self.used, self.limits, budget or self.budget, evaluations, self.consumed
        )
        try:
            found = yield from search.run()
        except GaveUp as gave_up:
            for plan in plans:
                self._reset(plan, search)
            return NodeResult(
                node.name,
                False,
                why=(Reason(BUDGET_EXHAUSTED, "", str(gave_up)),),
                steps=search.steps,
                evaluations=evaluations.count,
                partial_checks=evaluations.partial,
            )
        if not found:
            return NodeResult(
                node.name,
                False,
                why=tuple(self._explain(plans, node, held)),
                steps=search.steps,
                evaluations=evaluations.count,
                partial_checks=evaluations.partial,
            )
        outcomes = []
        picks = []
        for plan in plans:
            picks.extend(plan.picks)
            outcomes.append(
                ClaimOutcome(
                    plan.claim, tuple(plan.picks), node.name, self.classes, tuple(plan.shares)
                )
            )
            self._reset(plan, search)
        return NodeResult(
            node.name,
            True,
            score(picks),
            tuple(outcomes),
            steps=search.steps,
            evaluations=evaluations.count,
            partial_checks=evaluations.partial,
        )

    def _greedy(self, claims: Sequence[Claim], node: Node) -> NodeResult | None:
        """The answer without a search, when taking the first free candidates in order of
        preference satisfies every claim: claims without constraints, each request with one
        alternative (no ``All``, no admin access) and candidates that consume no counters.
        It is the search's own first branch, so the answer is the one the search would give.
        A request with fewer free candidates than it needs is infeasible without a search;
        None sends the call to the search."""
        if not self.caches:
            return None
        chosen: set[DeviceID] = set()
        outcomes = []
        picks: list[tuple[Alternative, Candidate]] = []
        for claim in claims:
            if claim.allocation is not None:
                held = self.held
                if any(
                    not r.admin_access and not r.shared and r.id not in held
                    for r in claim.allocated
                ):
                    return None
                outcomes.append(ClaimOutcome(claim))
                continue
            if not claim.simple or claim.problem or claim.minimum_devices > MAX_DEVICES_PER_CLAIM:
                return None
            mine: list[tuple[Alternative, Candidate]] = []
            for request in claim.requests:
                alternative = request.alternatives[0]
                groups = self._grouped.get((_node_key(node), alternative.key))
                if groups is None:
                    try:
                        groups, _ = self._groups(claim, alternative, node)
                    except _Problem:
                        return None
                need = alternative.count
                free = self._free_candidates(node, alternative, groups)
                for candidate in free:
                    cid = candidate.id
                    if cid in chosen:
                        continue
                    if candidate.consumes or candidate.shared:
                        return None
                    chosen.add(cid)
                    mine.append((alternative, candidate))
                    need -= 1
                    if need == 0:
                        break
                if need:
                    if len(free) >= alternative.count:
                        return None  # others of this call took them: the search decides
                    plan = AlternativePlan(alternative, groups, alternative.count)
                    left = {c.id for c in free}
                    taken = frozenset(c.id for g in groups for c in g.members if c.id not in left)
                    why = functools.partial(self._short, claim.name, plan, node, taken)
                    return NodeResult(node.name, False, why=why)
            picks.extend(mine)
            outcomes.append(ClaimOutcome(claim, tuple(mine), node.name, self.classes))
        return NodeResult(node.name, True, score(picks), tuple(outcomes), steps=len(picks))

    def _free_candidates(
        self, node: Node, alternative: Alternative, groups: list[Group]
    ) -> list[Candidate]:
        """The alternative's candidates on the node that nothing holds, in order of
        preference. Kept across reviews (``shared``) with the states of the pools they
        come from, and used again while each of those pools has the same state object in
        this allocator's snapshot (a snapshot gives a pool a new state only when it
        changed) and this allocator holds or released nothing in them."""
        key = (node.key, alternative.key)
        entry = self._free.get(key) if self.caches else None
        states = self.pools.states
        if entry is not None and (not self._touched or self._touched.isdisjoint(entry.pools)):
            if len(entry.pools) == 1:  # a node's own pool: the common case, kept cheap
                if states.get(entry.pools[0]) is entry.states[0]:
                    return entry.free
            elif all(states.get(k) is s for k, s in zip(entry.pools, entry.states, strict=True)):
                return entry.free
        members = [c for g in groups for c in g.members]
        pools = tuple(dict.fromkeys(c.id[:2] for c in members))
        if self._touched.intersection(pools) or not self.caches:
            held = self.held
            return [c for c in members if c.id not in held]
        free = []
        for candidate in members:
            state = states.get(candidate.id[:2])
            name = candidate.id.device
            if state is None or (name not in state.allocated and name not in state.reserved):
                free.append(candidate)
        self._free[key] = _Free(pools, tuple(states.get(k) for k in pools), free)
        return free

    def _reset(self, plan: ClaimPlan, search: Search) -> None:
        """Give back the counters and capacity a finished search still holds (its picks stay
        in the plan only for the answer)."""
        search.release(plan)

    # -- plans -----------------------------------------------------------------------

    def _plan(self, claim: Claim, node: Node, evaluations: Evaluations) -> ClaimPlan:
        if claim.problem is not None:
            raise _Problem(
                Reason(INVALID_CLAIM, claim.name, f"claim {claim.name}: {claim.problem}")
            )
        if claim.allocation is not None:
            return ClaimPlan(claim, [], [], fixed=True)
        if claim.minimum_devices > MAX_DEVICES_PER_CLAIM:
            raise _Problem(
                Reason(
                    TOO_MANY_DEVICES,
                    claim.name,
                    f"claim {claim.name}: number of requested devices {claim.minimum_devices}"
                    f" exceeds the claim limit of {MAX_DEVICES_PER_CLAIM}",
                    counts={"requested": claim.minimum_devices, "limit": MAX_DEVICES_PER_CLAIM},
                )
            )
        constraints = [self._constraint(claim, spec, evaluations) for spec in claim.constraints]
        requests = []
        for request in claim.requests:
            alternatives = []
            for alternative in request.alternatives:
                groups, usable = self._groups(claim, alternative, node)
                if alternative.all:
                    groups = self._with_capacity_left(alternative, groups)
                count = (
                    sum(len(g.members) for g in groups) if alternative.all else alternative.count
                )
                covering = [constraints[i] for i in claim.covering[alternative.name]]
                alternatives.append(AlternativePlan(alternative, groups, count, covering, usable))
            requests.append(RequestPlan(request.name, alternatives))
        if self.prune:
            for constraint in constraints:
                if isinstance(constraint, CelConstraint):
                    constraint.total = _fixed_size(constraint, requests)
        return ClaimPlan(claim, requests, constraints)

    def _with_capacity_left(self, alternative: Alternative, groups: list[Group]) -> list[Group]:
        """For ``All``: the devices that can still serve the request, as upstream counts
        them: a shared device whose capacity the stored shares used up is not one of them."""
        if not any(g.first.shared for g in groups):
            return groups
        return [g for g in groups if not g.first.shared or self._fits(alternative, g.first)]

    def _fits(self, alternative: Alternative, candidate: Candidate) -> bool:
        left = self.consumed.get(candidate.id)
        return share(alternative.capacity, candidate.capacities, left) is not None

    def _constraint(
        self, claim: Claim, spec: ConstraintSpec, evaluations: Evaluations
    ) -> Constraint:
        if spec.match_attribute is not None:
            return MatchAttribute(spec.label, spec.match_attribute)
        if spec.distinct_attribute is not None:
            return DistinctAttribute(spec.label, spec.distinct_attribute)
        assert spec.expression is not None
        try:
            program = compile_constraint(spec.expression, cost_limit=None)
        except CELError as err:
            raise _Problem(
                Reason(
                    INVALID_CLAIM,
                    claim.name,
                    f"claim {claim.name}: {spec.label}: CEL compile error: {err}",
                )
            ) from None
        last = max(
            (
                i
                for i, request in enumerate(claim.requests)
                if any(spec.covers(a) for a in request.alternatives)
            ),
            default=-1,
        )
        return CelConstraint(spec.label, program, last, evaluations)

    def _programs(self, claim: Claim, alternative: Alternative) -> tuple[tuple[Program, ...], ...]:
        device_class = self.classes.get(alternative.class_name)
        if device_class is None:
            raise _Problem(
                Reason(
                    INVALID_CLAIM,
                    claim.name,
                    f"claim {claim.name} request {alternative.name}: device class"
                    f" {alternative.class_name} does not exist",
                    alternative.name,
                )
            )
        out = []
        for owner, expressions in (
            (f"class {alternative.class_name}", _class_selectors(device_class)),
            (f"claim {claim.name} request {alternative.name}", alternative.selectors),
        ):
            programs = []
            for i, expression in enumerate(expressions):
                try:
                    programs.append(compile_selector(expression, cost_limit=None))
                except CELError as err:
                    raise _Problem(
                        Reason(
                            INVALID_CLAIM,
                            claim.name,
                            f"{owner}: selector #{i}: CEL compile error: {err}",
                            alternative.name,
                        )
                    ) from None
            out.append(tuple(programs))
        return tuple(out)

    def _tally(self, claim: Claim, alternative: Alternative, node: Node) -> Tally:
        key = (_node_key(node), alternative.key)
        found = self._filtered.get(key) if self.caches else None
        if found is None:
            class_programs, request_programs = self._programs(claim, alternative)
            reachable = [self._candidate(r) for r in self.pools.reachable(node)]
            found = filter_candidates(
                alternative, reachable, class_programs, request_programs, self.selectors
            )
            if self.caches:
                self._filtered[key] = found
        return found

    def _groups(
        self, claim: Claim, alternative: Alternative, node: Node
    ) -> tuple[list[Group], bool]:
        """The alternative's candidates on the node, grouped, and whether it can be served
        at all (``All`` cannot be over a pool that is incomplete or invalid)."""
        tally = self._tally(claim, alternative, node)
        usable = not (alternative.all and tally.unusable_pools)
        key = (_node_key(node), alternative.key)
        groups = self._grouped.get(key) if self.caches else None
        if groups is None:
            groups = group(tally.candidates, self.symmetry, self._signatures)
            if self.caches:
                self._grouped[key] = groups
        return groups, usable

    def _candidate(self, reach: Any) -> Candidate:
        state = reach.device.state
        found = self._candidates.get(id(state)) if self.caches else None
        if found is None or found.state is not state:
            found = Candidate(reach, self._late(reach.pool))
            if self.caches:
                self._candidates[id(state)] = found
        return found

    def _late(self, pool: PoolState) -> bool:
        """Whether a device of the pool has binding conditions: upstream tries such pools
        after all others."""
        found = self._binding_pools.get(id(pool))  # the snapshot keeps its pools alive
        if found is None:
            found = any(
                d.state is not None and bool(d.state.device.get("bindingConditions"))
                for d in pool.gathered.devices.values()
            )
            self._binding_pools[id(pool)] = found
        return found

    # -- explanations ----------------------------------------------------------------

    def _explain(
        self, plans: list[ClaimPlan], node: Node, held: Collection[DeviceID]
    ) -> list[Reason]:
        reasons: list[Reason] = []
        for plan in plans:
            if plan.fixed:
                continue
            name = plan.claim.name
            short = False
            for request in plan.requests:
                lines = [self._shortage(name, a, node, held) for a in request.alternatives]
                if all(line is not None for line in lines):
                    short = True
                    reasons.extend(line for line in lines if line is not None)
            if short:
                continue
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
                        line = self._shortage(plan.claim.name, alt, node, held, always=True)
                        if line is not None:
                            reasons.append(line)
        return reasons

    def _short(
        self, claim: str, plan: AlternativePlan, node: Node, taken: Collection[DeviceID]
    ) -> tuple[Reason, ...]:
        line = self._shortage(claim, plan, node, taken)
        return (line,) if line else ()

    def _shortage(
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
        tally = self._filtered.get((_node_key(node), alternative.key))
        if tally is None:
            tally = self._tally(Claim(claim), alternative, node)
        allocated = reserved = exhausted = used_up = free = 0
        for candidate in (c for g in alt.groups for c in g.members):
            if not alternative.admin and candidate.id in held:
                # This allocator's pool state: a candidate may come from a shared cache made
                # when other devices were allocated (``shared``).
                pool: PoolState = self.pools.pool(candidate.pool.key) or candidate.pool
                if candidate.id.device in pool.allocated:
                    allocated += 1
                else:
                    reserved += 1
            elif candidate.shared and not self._fits(alternative, candidate):
                used_up += 1
            elif (
                candidate.consumes
                and candidate.id not in self.consumed
                and not fits(candidate.consumes, self._remaining(candidate))
            ):
                exhausted += 1
            else:
                free += 1
        where = f"claim {claim} request {alternative.name}"
        request = alternative.name

        def reason(code: str, message: str, **counts: int) -> Reason:
            return Reason(code, claim, f"{where}: {message}", request, counts)

        if alternative.all:
            if not alt.usable:
                pools = ", ".join(f"{d}/{p}" for d, p in sorted(tally.unusable_pools))
                return reason(
                    POOL_UNUSABLE,
                    f"asks for all devices, but pool {pools} is incomplete or invalid",
                    pools=len(tally.unusable_pools),
                )
            if free == alt.count and free > 0 and not always:
                return None
            if alt.count == 0:
                return reason(
                    NO_CANDIDATES,
                    f"asks for all devices, and none is reachable from node {node.name}",
                    reachable=tally.reachable,
                )
        elif free >= alternative.count and not always:
            return None
        if tally.reachable == tally.class_excluded and not tally.unusable_pools:
            return reason(
                NO_CANDIDATES,
                f"no device of class {alternative.class_name} is reachable from node {node.name}",
                reachable=tally.reachable,
                classExcluded=tally.class_excluded,
            )
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
            ("allocated", allocated),
            ("reserved", reserved),
            ("counters exhausted", exhausted),
            ("capacity exhausted", used_up),
        ):
            if count:
                parts.append(f"{label} {count}")
        needs = "all" if alternative.all else str(alternative.count)
        counts = {
            "needed": alt.count if alternative.all else alternative.count,
            "free": free,
            "reachable": tally.reachable,
            "classExcluded": tally.class_excluded,
            "selectorExcluded": sum(tally.selector_excluded.values()),
            "unusablePools": sum(tally.unusable_pools.values()),
            "tainted": tally.tainted,
            "capacityInsufficient": tally.capacity_short,
            "allocated": allocated,
            "reserved": reserved,
            "countersExhausted": exhausted,
            "capacityExhausted": used_up,
        }
        return reason(
            _shortage_code(counts),
            f"needs {needs} device(s) of class {alternative.class_name}, {free} free"
            f" on node {node.name}" + (": " + "; ".join(parts) if parts else ""),
            **counts,
        )

    def _remaining(self, candidate: Candidate) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (pool, set_name, counter), limit in self.limits.items():
            if pool == candidate.pool.key:
                used = self.used.get((pool, set_name, counter), 0)
                out.setdefault(set_name, {})[counter] = limit - used
        return out


@dataclass(frozen=True, slots=True)
class _Free:
    """A node's free candidates for one alternative, and the pool states they were read
    from (see ``Allocator._free_candidates``)."""

    pools: tuple[PoolKey, ...]
    states: tuple[PoolState | None, ...]
    free: list[Candidate]


@dataclass(slots=True)
class _Ledger:
    """What one allocator holds and consumes (see ``Allocator.ledger``)."""

    held: set[DeviceID]
    limits: Usage
    used: Usage
    consumed: Consumed


@dataclass(frozen=True)
class PoolUsage:
    """What a snapshot's own allocations and reservations hold and consume."""

    held: frozenset[DeviceID]
    limits: Usage
    used: Usage
    consumed: tuple[tuple[DeviceID, Mapping[str, int]], ...] = ()
    """Per device that allocations hold shares of: capacity name -> amount consumed."""


_USAGE: weakref.WeakKeyDictionary[Pools, PoolUsage] = weakref.WeakKeyDictionary()


def pool_usage(pools: Pools) -> PoolUsage:
    """The devices the pools' allocations and reservations hold, every counter's limit and
    what the held devices consume of it; once per snapshot, in pools + held steps (a pool
    without counter sets consumes nothing)."""
    found = _USAGE.get(pools)
    if found is not None:
        return found
    held: set[DeviceID] = set()
    limits: Usage = {}
    used: Usage = {}
    consumed: list[tuple[DeviceID, Mapping[str, int]]] = []
    for state in pools.states.values():
        taken = state.allocated | state.reserved
        held.update(DeviceID(state.key[0], state.key[1], n) for n in taken)
        for name, amounts in state.shared.items():
            consumed.append((DeviceID(state.key[0], state.key[1], name), amounts))
        if not state.gathered.counter_sets:
            continue
        for set_name, counters in state.gathered.counter_sets.items():
            for counter, value in counters.items():
                limits[(state.key, set_name, counter)] = value
        # A shared device's counters are taken once, by its first share.
        for set_name, left in state.gathered.remaining(taken | state.shared.keys()).items():
            for counter, value in left.items():
                key = (state.key, set_name, counter)
                used[key] = limits[key] - value
    found = PoolUsage(frozenset(held), limits, used, tuple(consumed))
    _USAGE[pools] = found
    return found


def _not_searched(node: Node, budget: ReviewBudget) -> NodeResult:
    return NodeResult(
        node.name,
        False,
        why=(
            Reason(
                NOT_SEARCHED,
                "",
                f"not searched: the review's search budget ({budget.describe()}) was spent on"
                f" {budget.nodes} earlier node(s)",
                counts={"nodesSearched": budget.nodes},
            ),
        ),
    )


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


def _allocation_reaches(claim: Claim, node: Node) -> bool:
    """Whether an allocated claim may be used on the node: its allocation's node selector
    (none: every node) matches it, as the scheduler's filter of an allocated claim asks."""
    if claim.allocation is None:
        return True
    selector = claim.allocation.get("nodeSelector")
    return not selector or selector_matches(selector, node)


def _fixed_size(constraint: Constraint, requests: list[RequestPlan]) -> int | None:
    """How many devices the constraint will see, when one request of a fixed count (no
    ``firstAvailable`` choice, not ``All``) is all it covers; else None."""
    covered = [(r, a) for r in requests for a in r.alternatives if constraint in a.constraints]
    if len(covered) != 1:
        return None
    request, alternative = covered[0]
    if len(request.alternatives) != 1 or alternative.alternative.all:
        return None
    return alternative.count


def _class_selectors(device_class: JSON) -> tuple[str, ...]:
    spec = device_class.get("spec") or {}
    return tuple(
        str((s.get("cel") or {}).get("expression", ""))
        for s in spec.get("selectors") or ()
        if isinstance(s, dict)
    )


def _node_key(node: Node) -> str:
    return node.key

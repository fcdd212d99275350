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
counted) and answers a ``NodeResult`` (``outcome``): feasible or not, a score (see
``result``), per claim the upstream AllocationResult, and when infeasible, reasons naming
the claim, the request and what removed the candidates, with counts.

This module drives; four collaborators, made here, do the rest: the held ledger
(``ledger``: what is held and consumed, its books made on first use), the planner
(``planning``: each claim's plan on a node, and the caches), the explainer (``explain``:
reasons, built when first read) and the greedy fast path (``greedy``: take the first free
candidates when that is what the search would do; most nodes of a review end there, and
what it chose is kept per node and claims shape). Here: the search driver around
``search.Search``.

No I/O, no API types inside the loop: the search (``search``) runs over candidates
(``candidates``) and constraints (``constraints``) the planner builds. Caches are on unless
``caches=False``; ``symmetry=False`` turns off grouping of interchangeable devices,
``prune=False`` the three-valued checks of partial sets against CEL constraints
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
import time
from collections.abc import Generator, Iterable, Mapping, Sequence

from ..api.resource import DeviceID
from ..pools import Node, Pools, selector_matches
from ..toolkit import JSON
from .budget import ReviewBudget
from .claims import Claim
from .constraints import Evaluations
from .explain import Explainer
from .greedy import Greedy
from .ledger import Ledger
from .outcome import ClaimOutcome, NodeResult
from .planning import Planner, Problem
from .reasons import ALLOCATED_ELSEWHERE, BUDGET_EXHAUSTED, NOT_SEARCHED, Reason
from .result import score
from .search import SLICE, Budget, ClaimPlan, Consumed, GaveUp, Search, Usage

LOOK_EVERY = 16
"""Nodes answered without a search (microseconds each) between two looks at the clock."""
REPLAY_CHUNK = 256
"""Nodes whose kept answers (``Greedy.replay_all``) are read in one go, without a pause."""


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
        self.caches = caches
        self.ledger = Ledger(pools, reserved)
        self.planner = Planner(
            pools, classes, self.ledger, symmetry=symmetry, caches=caches, prune=prune
        )
        self.explainer = Explainer(pools, self.planner, self.ledger)
        self.greedy = Greedy(self.planner, self.ledger, self.explainer, classes)

    # -- holding (the ledger's) ------------------------------------------------------

    @property
    def reserved(self) -> set[DeviceID]:
        return self.ledger.reserved

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
        self.ledger.hold(devices)

    def release(self, devices: Iterable[DeviceID]) -> None:
        self.ledger.release(devices)

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
        *,
        outcomes: bool = True,
        shared: bool = False,
    ) -> list[NodeResult]:
        """The claims on each node, yielding to the event loop between chunks of the search
        and between nodes. One budget serves every node (``budget``, by default this
        allocator's ``Budget`` for the whole call): each node's search gets a share, and
        once it is spent the remaining nodes are answered "not searched". Nodes where the
        greedy path's kept answer for claims of this shape stands are answered from it, a
        chunk at a time, without the claims' outcomes (``outcomes=False``) or with them
        shared between reviews (``shared``) as ``Greedy.replay_all`` says. Cancelling the
        calling task stops the search at its next pause."""
        budget = budget if budget is not None else ReviewBudget(self.budget)
        out: list[NodeResult] = []
        paused = time.perf_counter()
        shape = self.greedy.shape(claims)  # once: the greedy path's answers are kept by it
        searched = True  # after a search (and before the first node), look at the clock
        replayed: list[NodeResult | None] = []
        for i, node in enumerate(nodes):
            if shape is not None:
                if not i % REPLAY_CHUNK:
                    if time.perf_counter() - paused > SLICE:
                        await asyncio.sleep(0)
                        paused = time.perf_counter()
                    chunk = nodes[i : i + REPLAY_CHUNK]
                    replayed = self.greedy.replay_all(claims, chunk, shape, outcomes, shared=shared)
                done = replayed[i % REPLAY_CHUNK]
                if done is not None:
                    out.append(done)
                    budget.spend(done.steps, 0)
                    continue
            look = searched or not i % LOOK_EVERY
            if look and budget.exhausted:
                out.extend(_not_searched(n, budget) for n in nodes[i:])
                break
            quick = self._quick(claims, node, shape)
            searched = quick is None
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
            if look and time.perf_counter() - paused > SLICE:  # most nodes take microseconds
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

    def _quick(
        self, claims: Sequence[Claim], node: Node, shape: int | None = None
    ) -> NodeResult | None:
        """The answer without a search: an allocated claim whose allocation does not reach
        the node, or what the greedy path finds (``greedy``); None when it takes a search.
        ``shape``: the claims' shape (``Greedy.shape``), when none of them is allocated."""
        if shape is not None:
            return self.greedy.answer(claims, node, shape)
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
        return self.greedy.answer(claims, node, None)

    # -- the search ------------------------------------------------------------------

    def _search(
        self, claims: Sequence[Claim], node: Node, budget: Budget | None
    ) -> Generator[None, None, NodeResult]:
        evaluations = self.planner.evaluations()
        try:
            plans = [self.planner.plan(claim, node, evaluations) for claim in claims]
        except Problem as problem:
            return NodeResult(node.name, False, why=(problem.reason,))
        held = self._held_with(plans)
        ledger = self.ledger
        search = Search(
            plans,
            held,
            ledger.used,
            ledger.limits,
            budget or self.budget,
            evaluations,
            ledger.consumed,
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
                why=tuple(self.explainer.explain(plans, node, held)),
                steps=search.steps,
                evaluations=evaluations.count,
                partial_checks=evaluations.partial,
            )
        return self._found(plans, node, search, evaluations)

    def _held_with(self, plans: list[ClaimPlan]) -> set[DeviceID]:
        """What is held, and the devices allocated claims have taken whole (their shares of
        multi-allocatable devices are in what the pools' shares consume already)."""
        held = self.ledger.held
        fixed = [
            r.id
            for p in plans
            if p.fixed
            for r in p.claim.allocated
            if not r.admin_access and not r.shared
        ]
        return held | set(fixed) if fixed else held

    def _found(
        self, plans: list[ClaimPlan], node: Node, search: Search, evaluations: Evaluations
    ) -> NodeResult:
        """The feasible answer from a search's picks (given back to the ledger's counters:
        they stay in the plans only for the answer)."""
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

    def _reset(self, plan: ClaimPlan, search: Search) -> None:
        """Give back the counters and capacity a finished search still holds (its picks stay
        in the plan only for the answer)."""
        search.release(plan)


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


def _allocation_reaches(claim: Claim, node: Node) -> bool:
    """Whether an allocated claim may be used on the node: its allocation's node selector
    (none: every node) matches it, as the scheduler's filter of an allocated claim asks."""
    if claim.allocation is None:
        return True
    selector = claim.allocation.get("nodeSelector")
    return not selector or selector_matches(selector, node)

"""The greedy fast path, and what it answered kept across reviews.

When taking the first free candidates in order of preference satisfies every claim
(claims without constraints, each request with one alternative, no ``All``, no admin
access, candidates that consume no counters), that is the search's own first branch, so
the answer is the one the search would give; most nodes of a review end here. A claim
of one request with fewer free candidates than it needs is infeasible without a search. Anything else
(``None``) goes to the search.

What the path chose on a node depends only on the claims' shape (per request: what decides
its candidates, and its count; not the names) and on the node's free candidates for each
request (``planning.Free``). So the choice is kept per node and shape (``Answered``: per
claim the request index and candidate of each pick, or which request came up short) with
the pool states it was read from, and replayed for the next claims of that shape while
those states stand: a review of a pod's claim after a bind recomputes only the nodes whose
pools the bind changed. Kept in ``SharedCaches`` with the free candidates (dropped with
them when devices or classes change).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..api.resource import DeviceID
from ..pools import Node, PoolKey, PoolState
from ..toolkit import JSON
from .candidates import Candidate
from .claims import MAX_DEVICES_PER_CLAIM, Alternative, Claim
from .explain import Explainer, about
from .ledger import Ledger
from .outcome import ClaimOutcome, NodeResult
from .planning import Planner, Problem, stands
from .result import score_of
from .search import AlternativePlan

Pick = tuple[int, Candidate]
"""A request's index in its claim, and the candidate taken for it."""


@dataclass(frozen=True, slots=True)
class Answered:
    """What the greedy path chose on one node for claims of one shape, and the pool states
    it read. ``picks``: per claim, in request order; ``short``: the (claim, request) index
    of a request with too few free candidates (then the node is infeasible)."""

    pools: tuple[PoolKey, ...]
    states: tuple[PoolState | None, ...]
    picks: tuple[tuple[Pick, ...], ...] = ()
    short: tuple[int, int] | None = None
    score: int = 100
    steps: int = 0
    """Devices picked."""
    bare: NodeResult | None = None
    """The feasible answer without the claims' outcomes (see ``replay_all``), shared by
    every review that asks for no outcomes."""
    shared: dict[Any, NodeResult] = field(default_factory=dict)
    """The feasible answer with outcomes, per the claims' request names and configurations,
    shared by every review that reads no more of them (see ``replay_all``)."""
    results: dict[Any, Any] = field(default_factory=dict)
    """What is made from these picks and kept while the answer stands, shared by every
    review that reads it: each claim's allocation result (by its position and
    ``Claim.result_key``), what readers of the result derive (``NodeResult.kept``), and
    for a node that is short, why (told of each claim by ``explain.about``). Never changed
    once made (only encoded into answers)."""


_NONE: dict[str, Answered] = {}
_SHORT = "short"
"""Where an infeasible answer keeps why (``Answered.results``)."""


def _result_keys(claims: Sequence[Claim]) -> tuple[Any, ...]:
    return tuple(c.result_key for c in claims)


class _Undecided(Exception):
    """The greedy path cannot answer: the search must."""


class Greedy:
    def __init__(
        self,
        planner: Planner,
        ledger: Ledger,
        explainer: Explainer,
        classes: Mapping[str, JSON],
    ) -> None:
        self.planner = planner
        self.ledger = ledger
        self.explainer = explainer
        self.classes = classes
        self.answered: dict[int, dict[str, Answered]] = {}
        """Per shape id and node key: what the path chose there (see ``SharedCaches``)."""
        self.shapes: dict[tuple[Any, ...], int] = {}
        """Each claims shape seen, numbered: the short key ``answered`` is kept under."""
        self.replayed = 0
        """Nodes answered from what was chosen before."""

    def shape(self, claims: Sequence[Claim]) -> int | None:
        """The number of the claims' shape, or None when what the path answers depends on
        more than the shape (an allocated claim, or one the path never answers)."""
        if not self.planner.caches:
            return None
        parts = []
        for claim in claims:
            if claim.allocation is not None or not _plain(claim):
                return None
            parts.append(
                tuple((r.alternatives[0].key, r.alternatives[0].count) for r in claim.requests)
            )
        shape = tuple(parts)
        return self.shapes.setdefault(shape, len(self.shapes))

    def answer(self, claims: Sequence[Claim], node: Node, shape: int | None) -> NodeResult | None:
        """The node's answer by the greedy path, or None when it takes a search. ``shape``
        (``shape(claims)``, once per review) lets an earlier answer for claims of the same
        shape on this node stand in, while the pools it read are unchanged."""
        planner = self.planner
        if not planner.caches:
            return None
        if shape is not None:
            known = self.answered.get(shape, _NONE).get(node.key)
            if known is not None and stands(
                known.pools, known.states, planner.pools.states, self.ledger.touched
            ):
                self.replayed += 1
                return self._replay(claims, node, known, _result_keys(claims))
        try:
            answered, kept = self._choose(claims, node)
        except _Undecided:
            return None
        if shape is not None and kept:
            self.answered.setdefault(shape, {})[node.key] = answered
        keys = _result_keys(claims) if shape is not None else None
        return self._replay(claims, node, answered, keys)

    def _choose(self, claims: Sequence[Claim], node: Node) -> tuple[Answered, bool]:
        """The first free candidates for every request, and whether every free list read
        was one the planner keeps (else the choice may not be kept either)."""
        chosen: set[DeviceID] = set()
        picks: list[tuple[Pick, ...]] = []
        pools: dict[PoolKey, PoolState | None] = {}
        kept = True
        for c, claim in enumerate(claims):
            if claim.allocation is not None:
                if not self._holds_whole(claim):
                    raise _Undecided
                picks.append(())
                continue
            if not _plain(claim):
                raise _Undecided
            mine: list[Pick] = []
            for r, request in enumerate(claim.requests):
                alternative = request.alternatives[0]
                try:
                    entry = self.planner.free(claim, alternative, node)
                except Problem:
                    raise _Undecided from None
                kept = kept and entry.kept
                pools.update(zip(entry.pools, entry.states, strict=True))
                need = alternative.count
                for candidate in entry.free:
                    if candidate.id in chosen:
                        continue
                    if candidate.consumes or candidate.shared:
                        raise _Undecided
                    chosen.add(candidate.id)
                    mine.append((r, candidate))
                    need -= 1
                    if need == 0:
                        break
                if need:
                    if (
                        len(entry.free) >= alternative.count
                        or len(claims) + len(claim.requests) > 2
                    ):
                        # Others of this call took them, or other requests may have reasons
                        # of their own to give: the search decides and explains.
                        raise _Undecided
                    read = tuple(pools), tuple(pools.values())
                    return Answered(*read, short=(c, r)), kept
            picks.append(tuple(mine))
        taken = [candidate for mine in picks for _, candidate in mine]
        read = tuple(pools), tuple(pools.values())
        points, steps = score_of(taken), len(taken)
        bare = NodeResult(node.name, True, points, (), steps=steps)
        return Answered(*read, tuple(picks), score=points, steps=steps, bare=bare), kept

    def _replay(
        self, claims: Sequence[Claim], node: Node, answered: Answered, keys: Any
    ) -> NodeResult:
        """The node's result for these claims from what was chosen (for them or for claims
        of the same shape); the claims' outcomes are made when first read."""
        if answered.short is not None:
            c, r = answered.short
            claim, alternative = claims[c], claims[c].requests[r].alternatives[0]
            reasons = answered.results.get(_SHORT) if keys is not None else None
            if reasons is None:
                too_few = self._too_few(claim, alternative, node)
                if keys is None:
                    return too_few
                # Why the node is short is the same for every claim of this shape while the
                # answer stands, but for the claim it names: made once, told of each claim.
                reasons = answered.results[_SHORT] = too_few.explanations
            return NodeResult(
                node.name, False, why=tuple(about(w, claim.name, alternative.name) for w in reasons)
            )
        return self._feasible(claims, node.name, answered, keys)

    def _feasible(
        self, claims: Sequence[Claim], node: str, answered: Answered, keys: Any
    ) -> NodeResult:
        """A feasible answer for these claims, their outcomes made when first read; what a
        reader derives from it may be kept with the answer (``NodeResult.kept``) under the
        claims' ``keys`` (None: not kept, an allocated claim's result is its own)."""
        outcomes = functools.partial(self._outcomes, claims, node, answered)
        kept = answered.results if keys is not None else None
        return NodeResult(
            node, True, answered.score, outcomes, steps=answered.steps, kept=kept, kept_key=keys
        )

    def replay_all(
        self,
        claims: Sequence[Claim],
        nodes: Sequence[Node],
        shape: int,
        outcomes: bool = True,
        *,
        shared: bool = False,
    ) -> list[NodeResult | None]:
        """Per node, its kept answer for claims of ``shape`` where it stands, else None (for
        ``answer``): what ``answer`` would say, in the loop a review over thousands of nodes
        spends most of its time in, kept tight. A node that is short is told of these
        claims, as ``answer`` tells it (in a filling cluster most nodes end up short).
        ``outcomes=False``: the caller reads feasibility and score only, and gets the kept
        answer without the claims' outcomes (``claims`` empty), one object shared by every
        such review.
        ``shared``: the caller reads of the outcomes only what the claims' request names
        and configurations decide (allocation results, devices), not which claims they
        are; it gets one result per kept answer and such names and configurations, shared
        by every such review, whose outcomes name the claims of the review that made it."""
        kept = self.answered.get(shape)
        if not kept or not self.planner.caches:
            return [None] * len(nodes)
        now = self.planner.pools.states
        touched = self.ledger.touched
        told = _result_keys(claims)
        keys = told if outcomes else None
        share = outcomes and shared
        out: list[NodeResult | None] = []
        replayed = 0  # counted here: ``out.count(None)`` compares each result with None
        for node in nodes:
            known = kept.get(node.key)
            if known is None:
                out.append(None)
                continue
            pools = known.pools
            # ``stands``, its one-pool case inlined: a call per node over thousands of them.
            if touched or len(pools) != 1:
                if not stands(pools, known.states, now, touched):
                    out.append(None)
                    continue
            elif now.get(pools[0]) is not known.states[0]:
                out.append(None)
                continue
            replayed += 1
            if known.short is not None:
                out.append(self._replay(claims, node, known, told))
                continue
            if not outcomes and known.bare is not None:
                out.append(known.bare)
                continue
            if share:
                result = known.shared.get(keys)
                if result is None:
                    result = known.shared[keys] = self._feasible(claims, node.name, known, keys)
                out.append(result)
                continue
            out.append(self._feasible(claims, node.name, known, keys))
        self.replayed += replayed
        return out

    def _outcomes(
        self, claims: Sequence[Claim], node: str, answered: Answered
    ) -> tuple[ClaimOutcome, ...]:
        outcomes = []
        for c, (claim, mine) in enumerate(zip(claims, answered.picks, strict=True)):
            if claim.allocation is not None:
                outcomes.append(ClaimOutcome(claim))
                continue
            requests = claim.requests
            taken = tuple((requests[r].alternatives[0], candidate) for r, candidate in mine)
            made = answered.results
            key = (c, claim.result_key)
            outcomes.append(ClaimOutcome(claim, taken, node, self.classes, made=made, made_key=key))
        return tuple(outcomes)

    def _holds_whole(self, claim: Claim) -> bool:
        """Whether an allocated claim's dedicated devices are all held already, so the
        greedy path may answer for it (else the search counts them)."""
        held = self.ledger.held
        return not any(
            not r.admin_access and not r.shared and r.id not in held for r in claim.allocated
        )

    def _too_few(self, claim: Claim, alternative: Alternative, node: Node) -> NodeResult:
        """Infeasible: the request has fewer free candidates than it needs. The reasons are
        built when first read."""
        free = self.planner.free_candidates(claim, alternative, node)
        groups, _ = self.planner.groups(claim, alternative, node)  # cached: the free list's
        plan = AlternativePlan(alternative, groups, alternative.count)
        left = {c.id for c in free}
        taken = frozenset(c.id for g in groups for c in g.members if c.id not in left)
        why = functools.partial(self.explainer.short, claim.name, plan, node, taken)
        return NodeResult(node.name, False, why=why)


def _plain(claim: Claim) -> bool:
    """Whether the greedy path may answer for an unallocated claim."""
    return claim.simple and not claim.problem and claim.minimum_devices <= MAX_DEVICES_PER_CLAIM

"""Planning: each claim on a node turned into the plain plan the search runs over, and the
caches that make planning cheap.

A ``Planner`` reads the snapshot's pools and the DeviceClasses and answers, per claim and
node, a ``search.ClaimPlan``: per request alternative its candidates on the node, grouped
(``candidates``), and the claim's constraints (``constraints``). A claim that cannot be
planned anywhere (unknown class, a selector or constraint that does not compile, too many
devices) raises ``Problem``, the same answer on every node.

Caches (on unless ``caches=False``), none of which depends on what is held: candidates per
device version, whether a pool has binding conditions, selector results per device
version, each node's filtered (``tally``) and grouped candidates per request alternative,
CEL constraint results per set of device signatures (``memo``, ``refuted``). ``shared``
keeps them across reviews by attaching them to each new planner. ``free_candidates`` is the
one cache that reads the held ledger: a node's candidates that nothing holds, kept with the
pool states they were read from, and used again while those ``stand``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..api.resource import share
from ..cel import CELError, Program, compile_constraint, compile_selector
from ..pools import Node, PoolKey, Pools, PoolState
from ..toolkit import JSON
from .candidates import Candidate, Group, SelectorCache, Tally, filter_candidates, group
from .claims import MAX_DEVICES_PER_CLAIM, Alternative, Claim, ConstraintSpec
from .constraints import CelConstraint, Constraint, DistinctAttribute, Evaluations, MatchAttribute
from .ledger import Ledger
from .reasons import INVALID_CLAIM, TOO_MANY_DEVICES, Reason
from .search import AlternativePlan, ClaimPlan, RequestPlan


class Problem(Exception):
    """A claim that cannot be searched at all (unknown class, a selector that does not
    compile): the same answer on every node."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(reason.message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Free:
    """A node's free candidates for one alternative, and the pool states they were read
    from (see ``Planner.free``); ``kept``: whether the planner's cache holds it (not when
    the ledger holds or released devices in those pools)."""

    pools: tuple[PoolKey, ...]
    states: tuple[PoolState | None, ...]
    free: list[Candidate]
    kept: bool = True


def stands(
    pools: tuple[PoolKey, ...],
    states: tuple[PoolState | None, ...],
    now: Mapping[PoolKey, PoolState],
    touched: set[PoolKey],
) -> bool:
    """Whether what was read from ``pools`` in ``states`` still holds: each pool has the
    same state object in the snapshot ``now`` (a snapshot gives a pool a new state only
    when it changed) and the ledger holds or released nothing in them (``touched``)."""
    if touched and not touched.isdisjoint(pools):
        return False
    if len(pools) == 1:  # a node's own pool: the common case, kept cheap
        return now.get(pools[0]) is states[0]
    return all(now.get(k) is s for k, s in zip(pools, states, strict=True))


class Planner:
    def __init__(
        self,
        pools: Pools,
        classes: Mapping[str, JSON],
        ledger: Ledger,
        *,
        symmetry: bool = True,
        caches: bool = True,
        prune: bool = True,
    ) -> None:
        self.pools = pools
        self.classes = classes
        self.ledger = ledger
        self._touched = ledger.touched  # one set for the ledger's life: read on every node
        self.symmetry = symmetry
        self.caches = caches
        self.prune = prune
        self.selectors = SelectorCache(caches)
        self.memo: dict[tuple[str, tuple[int, ...]], bool | str] | None = {} if caches else None
        self.refuted: dict[tuple[str, tuple[int, ...], int], bool] | None = {} if caches else None
        self.signatures: dict[Any, int] = {}
        self.candidates: dict[int, Candidate] = {}
        self.binding_pools: dict[int, bool] = {}
        self.filtered: dict[tuple[str, tuple[Any, ...]], Tally] = {}
        self.grouped: dict[tuple[str, tuple[Any, ...]], list[Group]] = {}
        self.free_entries: dict[tuple[str, tuple[Any, ...]], Free] = {}

    def evaluations(self) -> Evaluations:
        """A fresh count of CEL evaluations over this planner's constraint caches."""
        return Evaluations(self.memo, self.refuted)

    # -- plans -----------------------------------------------------------------------

    def plan(self, claim: Claim, node: Node, evaluations: Evaluations) -> ClaimPlan:
        if claim.problem is not None:
            raise Problem(Reason(INVALID_CLAIM, claim.name, f"claim {claim.name}: {claim.problem}"))
        if claim.allocation is not None:
            return ClaimPlan(claim, [], [], fixed=True)
        if claim.minimum_devices > MAX_DEVICES_PER_CLAIM:
            raise Problem(
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
                groups, usable = self.groups(claim, alternative, node)
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
        return [g for g in groups if not g.first.shared or self.fits(alternative, g.first)]

    def fits(self, alternative: Alternative, candidate: Candidate) -> bool:
        """Whether a shared device has the capacity left the alternative asks of it."""
        left = self.ledger.consumed.get(candidate.id)
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
            raise Problem(
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
            raise Problem(
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
                    raise Problem(
                        Reason(
                            INVALID_CLAIM,
                            claim.name,
                            f"{owner}: selector #{i}: CEL compile error: {err}",
                            alternative.name,
                        )
                    ) from None
            out.append(tuple(programs))
        return tuple(out)

    # -- candidates ------------------------------------------------------------------

    def tally(self, claim: Claim, alternative: Alternative, node: Node) -> Tally:
        """The alternative's candidates on the node, and what removed the others, counted."""
        key = (node.key, alternative.key)
        found = self.filtered.get(key) if self.caches else None
        if found is None:
            class_programs, request_programs = self._programs(claim, alternative)
            reachable = [self._candidate(r) for r in self.pools.reachable(node)]
            found = filter_candidates(
                alternative, reachable, class_programs, request_programs, self.selectors
            )
            if self.caches:
                self.filtered[key] = found
        return found

    def groups(
        self, claim: Claim, alternative: Alternative, node: Node
    ) -> tuple[list[Group], bool]:
        """The alternative's candidates on the node, grouped, and whether it can be served
        at all (``All`` cannot be over a pool that is incomplete or invalid)."""
        tally = self.tally(claim, alternative, node)
        usable = not (alternative.all and tally.unusable_pools)
        key = (node.key, alternative.key)
        groups = self.grouped.get(key) if self.caches else None
        if groups is None:
            groups = group(tally.candidates, self.symmetry, self.signatures)
            if self.caches:
                self.grouped[key] = groups
        return groups, usable

    def _candidate(self, reach: Any) -> Candidate:
        state = reach.device.state
        found = self.candidates.get(id(state)) if self.caches else None
        if found is None or found.state is not state:
            found = Candidate(reach, self._late(reach.pool))
            if self.caches:
                self.candidates[id(state)] = found
        return found

    def _late(self, pool: PoolState) -> bool:
        """Whether a device of the pool has binding conditions: upstream tries such pools
        after all others."""
        found = self.binding_pools.get(id(pool))  # the snapshot keeps its pools alive
        if found is None:
            found = any(
                d.state is not None and bool(d.state.device.get("bindingConditions"))
                for d in pool.gathered.devices.values()
            )
            self.binding_pools[id(pool)] = found
        return found

    def free_candidates(
        self, claim: Claim, alternative: Alternative, node: Node
    ) -> list[Candidate]:
        """The alternative's candidates on the node that nothing holds, in order of
        preference (see ``free``). Raises ``Problem`` as ``groups`` does."""
        return self.free(claim, alternative, node).free

    def free(self, claim: Claim, alternative: Alternative, node: Node) -> Free:
        """The alternative's free candidates on the node, with the pool states they were
        read from. Kept across reviews (``shared``) and used again while they ``stand``:
        then the node's groups are not even looked up. Raises ``Problem`` as ``groups``
        does."""
        key = (node.key, alternative.key)
        entry = self.free_entries.get(key) if self.caches else None
        states = self.pools.states
        touched = self._touched
        if entry is not None and stands(entry.pools, entry.states, states, touched):
            return entry
        groups, _ = self.groups(claim, alternative, node)
        members = [c for g in groups for c in g.members]
        pools = tuple(dict.fromkeys(c.id[:2] for c in members))
        read = tuple(states.get(k) for k in pools)
        if touched.intersection(pools) or not self.caches:
            held = self.ledger.held
            return Free(pools, read, [c for c in members if c.id not in held], kept=False)
        free = []
        for candidate in members:
            state = states.get(candidate.id[:2])
            name = candidate.id.device
            if state is None or (name not in state.allocated and name not in state.reserved):
                free.append(candidate)
        entry = self.free_entries[key] = Free(pools, read, free)
        return entry


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

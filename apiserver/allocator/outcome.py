"""What the allocator answers: per node a ``NodeResult``, per claim a ``ClaimOutcome``.

A ``NodeResult`` says whether the claims fit the node together, with a score (see
``result``), each claim's outcome and, when they do not, the reasons (``reasons.Reason``).
Both build what most callers never read only when it is first read: the claims' outcomes
and each one's upstream AllocationResult (most nodes of a review are never bound to) and the
reasons of an infeasible node (most are never shown).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.resource import DeviceID
from ..toolkit import JSON
from .candidates import NEEDS_ATTACH, Candidate
from .claims import Alternative, Claim
from .reasons import Reason
from .result import allocation_result


@dataclass(slots=True)
class ClaimOutcome:
    """Slotted: a review answered with allocations makes one per claim and node."""

    claim: Claim
    picks: tuple[tuple[Alternative, Candidate], ...] = ()
    node: str = ""
    classes: Mapping[str, JSON] = field(default_factory=dict, repr=False, compare=False)
    shares: tuple[dict[str, int] | None, ...] = ()
    """Beside each pick: what it consumes of a shared device (None for a dedicated one)."""
    made: dict[Any, JSON] | None = field(default=None, repr=False, compare=False)
    """Allocation results made for the same picks on the same node, by ``made_key``:
    claims of one shape with the same request names and configuration share one."""
    made_key: Any = None
    _allocation: JSON | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.claim.name

    @property
    def devices(self) -> tuple[DeviceID, ...]:
        """The devices newly chosen for the claim, admin-access ones excepted (what to hold)."""
        return tuple(c.id for a, c in self.picks if not a.admin)

    @property
    def to_attach(self) -> tuple[DeviceID, ...]:
        """The devices newly chosen that must be attached before a pod uses them: fabric
        devices not attached yet, and devices with binding conditions (KEP-5007)."""
        return tuple(c.id for _, c in self.picks if c.rank == NEEDS_ATTACH)

    @property
    def allocation(self) -> JSON | None:
        """Upstream AllocationResult (the existing one for a claim that was allocated
        already), built when first read: most nodes of a review are never bound to."""
        if self.claim.allocation is not None:
            return self.claim.allocation
        if self._allocation is None:
            self._allocation = self._made()
        return self._allocation

    def _made(self) -> JSON:
        if self.made is None:
            return self._result()
        found = self.made.get(self.made_key)
        if found is None:
            found = self.made[self.made_key] = self._result()
        return found

    def _result(self) -> JSON:
        return allocation_result(self.claim, list(self.picks), self.classes, self.node, self.shares)


@dataclass(slots=True)
class NodeResult:
    """Slotted: a review over thousands of nodes makes one per node."""

    node: str
    feasible: bool
    score: int = 0
    outcomes: tuple[ClaimOutcome, ...] | Callable[[], tuple[ClaimOutcome, ...]] = ()
    """Each claim's outcome, or how to build them when first read (``claims``): a review
    answered with scores only never reads them."""
    why: tuple[Reason, ...] | Callable[[], tuple[Reason, ...]] = ()
    """The reasons, or how to build them when first read (most are never read)."""
    steps: int = 0
    evaluations: int = 0
    """CEL constraint evaluations the search made."""
    partial_checks: int = 0
    """Three-valued checks of partial sets against CEL constraints (``partial``)."""
    kept: dict[Any, Any] | None = None
    """Where a reader may keep what it derives from this feasible result (an answer's
    entry) for the next result replaying the same kept answer, under ``kept_key`` (the
    claims' request names and configurations) and a key of its own: it lives as long as
    the answer stands. None when nothing is kept."""
    kept_key: Any = None

    @property
    def claims(self) -> tuple[ClaimOutcome, ...]:
        outcomes = self.outcomes
        if callable(outcomes):
            outcomes = self.outcomes = outcomes()
        return outcomes

    @property
    def devices(self) -> tuple[DeviceID, ...]:
        return tuple(d for c in self.claims for d in c.devices)

    @property
    def explanations(self) -> tuple[Reason, ...]:
        """Why the node is infeasible: each a code, the claim, the request and what removed
        its candidates, with counts."""
        why = self.why
        if callable(why):
            why = self.why = why()
        return why

    @property
    def reasons(self) -> tuple[str, ...]:
        """The explanations' messages, for people and logs."""
        return tuple(r.message for r in self.explanations)

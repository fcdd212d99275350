"""Why a node is infeasible, as values: a code, the claim and request it is about, counts.

The engine builds a ``Reason`` where it knows what went wrong, so nothing downstream reads
prose: the review renders ``code``/``claim``/``request``/``message`` as they are, and the
scheduler shim decides from ``code`` alone whether preemption could help. ``message`` is the
full human sentence (naming the claim and request, as before); ``counts`` are the figures
the sentence quotes (candidates free, allocated, excluded by a selector, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

NO_CANDIDATES = "NoCandidates"
"""No device of the request's class is reachable from the node."""
NO_MATCHING_DEVICES = "NoMatchingDevices"
"""Devices of the class are reachable, but the request's selectors exclude every one."""
CONSTRAINT_UNSATISFIABLE = "ConstraintUnsatisfiable"
COUNTERS_EXHAUSTED = "CountersExhausted"
CAPACITY_EXHAUSTED = "CapacityExhausted"
POOL_UNUSABLE = "PoolUnusable"
"""``All`` over a pool that is incomplete or invalid."""
TOO_MANY_DEVICES = "TooManyDevices"
BUDGET_EXHAUSTED = "BudgetExhausted"
NOT_SEARCHED = "NotSearched"
INVALID_CLAIM = "InvalidClaim"
"""The claim cannot be searched anywhere: its class does not exist, a selector or constraint
does not compile, or its spec is unusable."""
ALLOCATED_ELSEWHERE = "AllocatedElsewhere"
"""The claim is allocated already, and its allocation does not reach the node."""
UNSATISFIABLE = "Unsatisfiable"
"""Not enough free candidates (others hold them), or no combination fits: the rest."""


@dataclass(frozen=True)
class Reason:
    code: str
    claim: str
    message: str
    request: str | None = None
    counts: Mapping[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message

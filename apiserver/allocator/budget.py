"""One search budget for a whole review, shared out over its candidate nodes.

A ``Budget`` bounds one search (steps, CEL evaluations, seconds). A review searches
many nodes, and a budget per node made its work grow with the number of nodes (40 nodes
reaching one pool of 64 devices took 40 budgets). ``ReviewBudget`` holds one budget for
the review: each node's search gets a share of what is left, and what it spends is taken
off. A share is what is left divided by the nodes still to search (so easy nodes leave
their part to the later ones), but at least ``1/NODE_SHARE`` of the whole budget (so one
hard node still gets a real try when many nodes follow), and never more than is left.
Once the steps, the evaluations or the time are spent, the remaining nodes are not
searched at all; the engine says so per node.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .search import Budget

NODE_SHARE = 10
"""A node may always spend up to a tenth of the review's budget, if that much is left."""


@dataclass
class ReviewBudget:
    budget: Budget = field(default_factory=Budget)
    clock: Callable[[], float] = time.perf_counter
    steps: int = 0
    """Steps spent so far, over every node."""
    evaluations: int = 0
    """CEL constraint evaluations spent so far, over every node."""
    nodes: int = 0
    """Nodes whose search has ended (answered, or given up on its share)."""

    def __post_init__(self) -> None:
        self.deadline = self.clock() + self.budget.seconds

    @property
    def exhausted(self) -> bool:
        """Nothing left to search with: steps, evaluations or time are spent."""
        return (
            self.steps >= self.budget.steps
            or self.evaluations >= self.budget.evaluations
            or self.clock() >= self.deadline
        )

    def share(self, nodes_left: int) -> Budget:
        """The budget of the next node's search, with ``nodes_left`` nodes (it included)
        still to search."""
        whole = self.budget
        left = max(nodes_left, 1)
        seconds_left = max(self.deadline - self.clock(), 0.0)
        return Budget(
            steps=_part(whole.steps - self.steps, whole.steps, left),
            evaluations=_part(whole.evaluations - self.evaluations, whole.evaluations, left),
            seconds=min(seconds_left, max(seconds_left / left, whole.seconds / NODE_SHARE)),
            chunk=whole.chunk,
        )

    def spend(self, steps: int, evaluations: int) -> None:
        """What one node's search spent (time is spent by the clock)."""
        self.steps += steps
        self.evaluations += evaluations
        self.nodes += 1

    def describe(self) -> str:
        whole = self.budget
        return f"{whole.seconds:g}s, {whole.steps} steps, {whole.evaluations} CEL evaluations"


def _part(remaining: int, whole: int, nodes_left: int) -> int:
    remaining = max(remaining, 0)
    return min(remaining, max(remaining // nodes_left, whole // NODE_SHARE, 1))

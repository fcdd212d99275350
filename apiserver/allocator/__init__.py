"""The allocator: which devices satisfy claims on a node, searched over the pools layer.

``Allocator`` (``engine``) is the entry point: a ``Pools`` snapshot and the DeviceClasses
in; per node a ``NodeResult`` out (``outcome``: feasible, score, upstream AllocationResult
per claim, reasons as ``Reason`` values: code, claim, request, counts, message).
``parse_claim`` reads a ResourceClaim or its spec; ``ReviewBudget`` is one search budget
shared by every node of a review (``budget``). The engine drives the search and the greedy
fast path and composes three collaborators: the held ledger (``ledger``: what is held and
consumed), the planner (``planning``: each claim's plan on a node, and the caches) and the
explainer (``explain``: why a node is infeasible). The search itself (``search``), its
candidates (``candidates``), constraints (``constraints``) and output shapes and score
(``result``) have no I/O and no API types. ``SharedCaches`` (``shared``) keeps what
planners compute over the same devices and classes across reviews.
"""

from .budget import NODE_SHARE, ReviewBudget
from .candidates import RANK_NAMES, Candidate
from .claims import MAX_DEVICES_PER_CLAIM, Alternative, Claim, ConstraintSpec, Request, parse_claim
from .engine import Allocator
from .outcome import ClaimOutcome, NodeResult
from .reasons import Reason
from .result import score
from .search import Budget, GaveUp
from .shared import SharedCaches

__all__ = [
    "MAX_DEVICES_PER_CLAIM",
    "NODE_SHARE",
    "RANK_NAMES",
    "Allocator",
    "Alternative",
    "Budget",
    "Candidate",
    "Claim",
    "ClaimOutcome",
    "ConstraintSpec",
    "GaveUp",
    "NodeResult",
    "Reason",
    "Request",
    "ReviewBudget",
    "SharedCaches",
    "parse_claim",
    "score",
]

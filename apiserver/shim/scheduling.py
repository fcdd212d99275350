"""Filter and prioritize: one AllocationReview of the pod's claims over the candidate nodes,
read back as the scheduler wants it. Which nodes fit and how well is the review's answer.

Filter asks for scores only (``spec.answer: Scores``): feasibility, score and reasons per
node, without the allocations only bind needs. Prioritize follows the filter of the same pod
in kube-scheduler's scheduling cycle, over the nodes the filter passed, and is answered from
the filter's answer (``FilterMemory``), as kube-scheduler's DynamicResources plugin scores
from what its Filter left in the cycle state: one review per cycle. A change between the two
(another pod's bind) costs at most a less preferred node; the bind's reserving review is
what guards the allocation. Without a filter answer for the pod, its claims and every node
asked (another shim replica filtered, or the answer is older than ``CYCLE_SECONDS``),
prioritize asks its own review. The memory keeps the pod the filter was given too: the bind
of the same cycle takes it from there (``binding.py``)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from ..api.resource.allocationreview import ANSWER_SCORES
from ..kubeclient import APIError, KubeClient
from ..toolkit import JSON
from .claims import pod_claims, pod_namespace
from .extender import FilterArgs, FilterResult, scaled
from .paths import Paths

PREEMPTION_HELPS: dict[str, bool] = {
    # Nothing on the node could ever serve the request: no pod's eviction changes that.
    "NoCandidates": False,
    "NoMatchingDevices": False,
    "PoolUnusable": False,
    "TooManyDevices": False,
    "InvalidClaim": False,
    "AllocatedElsewhere": False,
    "NodeNotFound": False,
    # Devices, counters or capacity others hold: evicting them may free what is needed.
    "Unsatisfiable": True,
    "ConstraintUnsatisfiable": True,
    "CountersExhausted": True,
    "CapacityExhausted": True,
    # No answer was reached for the node: say nothing final about it.
    "BudgetExhausted": True,
    "NotSearched": True,
    "ReservationContention": True,
}
"""Per review reason code, whether preemption might make the node fit. A node is
unresolvable only when every reason says no; a code not in the table (a newer server)
counts as one preemption might help with, the answer that never strands a pod."""


async def review(
    api: KubeClient,
    paths: Paths,
    namespace: str,
    claims: list[str],
    nodes: list[str],
    *,
    reserve: bool = False,
    answer: str | None = None,
) -> JSON:
    """The status of an AllocationReview of ``claims`` on ``nodes`` (``answer``: the
    review's answer mode, the server's default when None)."""
    spec: JSON = {
        "claims": [{"namespace": namespace, "name": name} for name in claims],
        "nodeNames": nodes,
    }
    if reserve:
        spec["reserve"] = True
    if answer is not None:
        spec["answer"] = answer
    body = {"apiVersion": f"{paths.group}/v1alpha3", "kind": "AllocationReview", "spec": spec}
    answered = await api.create(paths.allocation_reviews, body)
    return dict(answered.get("status") or {})


def why_infeasible(entry: JSON) -> str:
    reasons = entry.get("reasons") or []
    text = "; ".join(
        f"{r.get('claim')}{'/' + r['request'] if r.get('request') else ''}: "
        f"{r.get('reason')}: {r.get('message')}"
        for r in reasons
        if isinstance(r, dict)
    )
    return text or "the claims cannot be allocated on this node"


def unresolvable(entry: JSON) -> bool:
    reasons = [r for r in entry.get("reasons") or [] if isinstance(r, dict)]
    return bool(reasons) and all(
        not PREEMPTION_HELPS.get(str(r.get("reason")), True) for r in reasons
    )


FILTERS_REMEMBERED = 256
"""Filter answers kept for the prioritize that follows (one per pod being scheduled)."""
CYCLE_SECONDS = 10.0
"""How long a filter answer stands for the prioritize of its scheduling cycle (which
kube-scheduler calls right after the filter)."""


@dataclass(frozen=True)
class Remembered:
    claims: tuple[str, ...]
    at: float
    entries: dict[str, JSON]
    """The review's entry per node name."""
    pod: JSON
    """The pod as the filter was given it."""
    unallocated: bool = False
    """Whether the filter's review read every one of the pod's claims unallocated."""


class FilterMemory:
    """The last filter answers, by pod, with when they were made."""

    def __init__(
        self, size: int = FILTERS_REMEMBERED, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.size = size
        self.clock = clock
        self._by_pod: OrderedDict[str, Remembered] = OrderedDict()

    def keep(
        self, pod: JSON, claims: list[str], entries: dict[str, JSON], *, unallocated: bool = False
    ) -> None:
        key = _pod_key(pod)
        self._by_pod[key] = Remembered(tuple(claims), self.clock(), entries, pod, unallocated)
        self._by_pod.move_to_end(key)
        while len(self._by_pod) > self.size:
            self._by_pod.popitem(last=False)

    def recall(self, pod: str, claims: list[str], nodes: list[str]) -> Remembered | None:
        """The filter's answer for the pod, if it is of this scheduling cycle, for the same
        claims, and answered every one of ``nodes``."""
        found = self.of_cycle(pod)
        if found is None or found.claims != tuple(claims):
            return None
        if any(n not in found.entries for n in nodes):
            return None
        return found

    def of_cycle(self, pod: str) -> Remembered | None:
        """The filter's answer for the pod (by uid), if it is of this scheduling cycle."""
        found = self._by_pod.get(pod)
        if found is None or self.clock() - found.at > CYCLE_SECONDS:
            return None
        return found


def _pod_key(pod: JSON) -> str:
    meta = pod.get("metadata") or {}
    return str(meta.get("uid") or f"{pod_namespace(pod)}/{meta.get('name')}")


def _read_unallocated(status: JSON, claims: list[str]) -> bool:
    """Whether the review's answer read every one of ``claims`` unallocated."""
    read = {str(c.get("name")): c for c in status.get("claims") or [] if isinstance(c, dict)}
    return all(name in read and read[name].get("allocated") is False for name in claims)


def _entries(status: JSON) -> dict[str, JSON]:
    return {str(e.get("nodeName")): e for e in status.get("nodes") or [] if isinstance(e, dict)}


class Scheduler:
    """The extender's filter and prioritize verbs."""

    def __init__(self, api: KubeClient, paths: Paths) -> None:
        self.api = api
        self.paths = paths
        self.memory = FilterMemory()

    async def filter(self, args: FilterArgs) -> FilterResult:
        claims = pod_claims(args.pod)
        if claims.pending:
            why = f"waiting for the claims of {', '.join(claims.pending)} to be made"
            return FilterResult(failed=dict.fromkeys(args.node_names, why))
        if not claims.names or not args.node_names:
            return FilterResult(fits=list(args.node_names))
        try:
            status = await self._scores(args, claims.names)
        except APIError as err:
            return FilterResult(error=f"allocation review failed: {err}")
        result = FilterResult()
        answered = _entries(status)
        unallocated = _read_unallocated(status, claims.names)
        self.memory.keep(args.pod, claims.names, answered, unallocated=unallocated)
        for node in args.node_names:
            entry = answered.get(node)
            if entry is None:
                result.failed[node] = "the allocation review did not answer for this node"
            elif entry.get("feasible"):
                result.fits.append(node)
            elif unresolvable(entry):
                result.unresolvable[node] = why_infeasible(entry)
            else:
                result.failed[node] = why_infeasible(entry)
        return result

    async def prioritize(self, args: FilterArgs) -> dict[str, int]:
        """Each candidate's score, 0..10; 0 for a node the claims do not fit. A pod without
        claims scores nothing (the extender has no opinion)."""
        claims = pod_claims(args.pod)
        if not claims.names or claims.pending or not args.node_names:
            return {}
        found = self.memory.recall(_pod_key(args.pod), claims.names, args.node_names)
        if found is not None:
            entries = found.entries
        else:
            entries = _entries(await self._scores(args, claims.names))
        return {
            name: scaled(e.get("score")) if e.get("feasible") else 0
            for name in args.node_names
            if (e := entries.get(name)) is not None
        }

    async def _scores(self, args: FilterArgs, claims: list[str]) -> JSON:
        """The scores-only review of the pod's claims over the call's nodes."""
        namespace = pod_namespace(args.pod)
        return await review(
            self.api, self.paths, namespace, claims, args.node_names, answer=ANSWER_SCORES
        )

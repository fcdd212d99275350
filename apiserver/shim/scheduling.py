"""Filter and prioritize: one AllocationReview of the pod's claims over the candidate nodes,
read back as the scheduler wants it. Which nodes fit and how well is the review's answer."""

from __future__ import annotations

from typing import Any

from .claims import pod_claims, pod_namespace
from .client import APIClient, APIError
from .extender import FilterArgs, FilterResult, scaled
from .paths import Paths

JSON = dict[str, Any]

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
    api: APIClient,
    paths: Paths,
    namespace: str,
    claims: list[str],
    nodes: list[str],
    *,
    reserve: bool = False,
) -> JSON:
    """The status of an AllocationReview of ``claims`` on ``nodes``."""
    spec: JSON = {
        "claims": [{"namespace": namespace, "name": name} for name in claims],
        "nodeNames": nodes,
    }
    if reserve:
        spec["reserve"] = True
    body = {"apiVersion": f"{paths.group}/v1alpha3", "kind": "AllocationReview", "spec": spec}
    answer = await api.create(paths.allocation_reviews, body)
    return dict(answer.get("status") or {})


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


class Scheduler:
    """The extender's filter and prioritize verbs."""

    def __init__(self, api: APIClient, paths: Paths) -> None:
        self.api = api
        self.paths = paths

    async def filter(self, args: FilterArgs) -> FilterResult:
        claims = pod_claims(args.pod)
        if claims.pending:
            why = f"waiting for the claims of {', '.join(claims.pending)} to be made"
            return FilterResult(failed=dict.fromkeys(args.node_names, why))
        if not claims.names or not args.node_names:
            return FilterResult(fits=list(args.node_names))
        try:
            status = await review(
                self.api, self.paths, pod_namespace(args.pod), claims.names, args.node_names
            )
        except APIError as err:
            return FilterResult(error=f"allocation review failed: {err}")
        result = FilterResult()
        answered = {e.get("nodeName"): e for e in status.get("nodes") or [] if isinstance(e, dict)}
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
        status = await review(
            self.api, self.paths, pod_namespace(args.pod), claims.names, args.node_names
        )
        return {
            str(e.get("nodeName")): scaled(e.get("score")) if e.get("feasible") else 0
            for e in status.get("nodes") or []
            if isinstance(e, dict)
        }

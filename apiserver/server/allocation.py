"""The allocation service: what answers an AllocationReview.

A review first catches up (the cluster's sources reach the revision the store had when the
review arrived, and the pool index has absorbed the device view), so ``kubectl apply``
followed by a review never gets a stale answer; on any supported etcd, since a source asks
for progress it can count on (a progress mark where etcd cannot order its notifications,
see ``storage.etcd``). One search budget serves the whole review (``ReviewBudget``), and a
review whose client goes away is cancelled (``machinery.disconnect``), which stops
its search at the next pause. Then: the claims (stored ones from the
claims source, inline specs as sent), the candidate nodes (named, or every node the
cluster knows; a name with no Node object is a node without labels), one allocator over a
snapshot of the pools with every reserved device held, and the engine's answer per node,
best first (feasible, score, then name). A reserving review holds the devices chosen on the
best feasible node in a DeviceReservation; if another review took one of them in between,
it asks again (a few times) before it answers without a reservation.

The answer carries ``status.stateVersion`` (``stateversion``); with ``spec.answer: Scores``
each node's entry leaves out its allocations, and a review of no nodes answers only the
version. The pool index's snapshot is taken again only when a pool changed, and the
allocator's candidates, selector results and groups are kept across reviews while the
devices and classes stay the same (``allocator.SharedCaches``).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Sequence
from typing import Any

from ..allocator import Allocator, Claim, NodeResult, ReviewBudget, SharedCaches, parse_claim
from ..api.resource.allocationreview import (
    ANSWER_SCORES,
    RESERVATION_SECONDS_DEFAULT,
    AllocationReview,
)
from ..api.resource.views import DeviceID
from ..machinery import errors
from ..machinery.user import UserInfo
from ..pools import Node, PoolIndex, Pools
from ..reservations import ClaimRef, ReservationService
from ..storage import Store
from .cluster import Cluster
from .stateversion import StateVersion

log = logging.getLogger("apiserver.allocation")

CATCH_UP_SECONDS = 10.0
"""How long a review waits for the caches to reach the store's revision before it answers
503 (a store that cannot be followed is unavailable, not a reason for a stale answer)."""
ASK_AGAIN_SECONDS = 0.5
"""How long a catch-up waits for a source's progress before asking for it again."""
RESERVE_ATTEMPTS = 3
_REQUEST = re.compile(r"^claim (?P<claim>\S+)(?: request (?P<request>\S+))?: (?P<message>.*)$")
_REASONS = (
    ("not searched", "NotSearched"),
    ("budget", "BudgetExhausted"),
    ("unsatisfiable", "ConstraintUnsatisfiable"),
    ("counters exhausted", "CountersExhausted"),
    ("incomplete or invalid", "PoolUnusable"),
    ("is reachable from", "NoCandidates"),
    ("exceed the claim limit", "TooManyDevices"),
)


class AllocationService:
    def __init__(
        self,
        cluster: Cluster,
        pools: PoolIndex,
        reservations: ReservationService,
        store: Store,
    ) -> None:
        self.cluster = cluster
        self.pools = pools
        self.reservations = reservations
        self.store = store
        self.version = StateVersion([*cluster.sources.all(), reservations.source], pools)
        self._snapshot: tuple[int, Pools] | None = None
        self._shared: SharedCaches | None = None

    async def review(self, review: AllocationReview, user: UserInfo) -> dict[str, Any]:
        await self._catch_up()
        spec = review.spec
        claims = [self._claim(i, ref) for i, ref in enumerate(spec.claims)]
        nodes = self._nodes(spec.node_names)
        scores_only = spec.answer == ANSWER_SCORES
        budget = ReviewBudget()  # one for the review, every attempt and node included
        for _ in range(RESERVE_ATTEMPTS):
            held = self.reservations.held()
            version = self.version.current(held)
            if not nodes:
                return {"nodes": [], "stateVersion": version}
            pools, classes = self._pools(), self._classes()
            allocator = Allocator(pools, classes, reserved={DeviceID(*d) for d in held})
            # Candidates, selector results and groups survive while devices and classes do.
            self._shared = SharedCaches.for_inputs(self._shared, pools, classes)
            self._shared.attach(allocator)
            results = sorted(await allocator.review(claims, nodes, budget), key=_rank)
            status: dict[str, Any] = {
                "nodes": [_node_answer(r, allocations=not scores_only) for r in results],
                "stateVersion": version,
            }
            best = next((r for r in results if r.feasible), None)
            if not spec.reserve or best is None:
                return status
            try:
                reservation = await self.reservations.reserve(
                    best.node,
                    [tuple(d) for d in best.devices],  # type: ignore[misc]
                    # An inline claim is named as the review names it (in "default" without
                    # a namespace): no stored allocation will release it; it expires.
                    [
                        ClaimRef(ref.namespace or "default", ref.name or f"inline-{i}")
                        for i, ref in enumerate(spec.claims)
                    ],
                    float(spec.reservation_seconds or RESERVATION_SECONDS_DEFAULT),
                )
            except errors.StatusError as err:
                if err.code != 409:
                    raise
                log.info("reserving on %s lost a race (%s); asking again", best.node, err)
                continue
            status["reservation"] = {
                "name": reservation.metadata.name,
                "nodeName": best.node,
                "expirationTime": reservation.spec.expiration_time,
            }
            return status
        return status

    # -- inputs ----------------------------------------------------------------------

    def _pools(self) -> Pools:
        """The pool index's snapshot, taken again only after a pool changed (building one
        walks every device)."""
        changes = self.version.pool_changes
        if self._snapshot is None or self._snapshot[0] != changes:
            previous = self._snapshot[1] if self._snapshot is not None else None
            self._snapshot = (changes, self.pools.snapshot(previous))
        return self._snapshot[1]

    async def _catch_up(self) -> None:
        """Every source this mode reads from its own store reaches the store's current
        revision, and the pool index has absorbed the view."""
        revision = await self.store.current_revision()
        sources = self.cluster.own_sources()
        deadline = time.monotonic() + CATCH_UP_SECONDS
        ask = 0.0
        while behind := [s for s in sources if s.revision < revision]:
            now = time.monotonic()
            if now >= ask:
                # A source of a kind nobody wrote lately knows of the newer revisions only
                # from the store's progress reports (on an etcd that cannot order them, a
                # progress mark written for it): ask now, and again if a request was lost.
                for source in behind:
                    source.request_progress()
                ask = now + ASK_AGAIN_SECONDS
            if now > deadline:
                raise errors.StatusError(
                    503,
                    "ServiceUnavailable",
                    "the allocation caches did not catch up with the store; retry",
                    headers={"Retry-After": "1"},
                )
            await asyncio.sleep(
                0.005
            )  # a catch-up of the caches, not a condition another task sets
        await self.pools.settle()

    def _claim(self, index: int, ref: Any) -> Claim:
        if ref.spec is not None:
            name = ref.name or f"spec.claims[{index}]"
            return parse_claim(
                name, {"spec": ref.spec.model_dump(by_alias=True, exclude_none=True)}
            )
        key = f"{ref.namespace}/{ref.name}"
        stored = self.cluster.sources.claims.get(key)
        if stored is None:
            raise errors.not_found("resourceclaims", "resource.k8s.io", key)
        return parse_claim(key, stored)

    def _nodes(self, names: Sequence[str] | None) -> list[Node]:
        source = self.cluster.sources.nodes
        if names is None:
            objects = source.items()
            return [Node(str(o["metadata"]["name"]), _labels(o)) for o in objects]
        out = []
        for name in names:
            obj = source.get(name)
            out.append(Node(name, _labels(obj) if obj is not None else {}))
        return out

    def _classes(self) -> dict[str, dict[str, Any]]:
        return {
            str(o["metadata"]["name"]): o
            for o in self.cluster.sources.classes.items()
            if isinstance(o.get("metadata"), dict)
        }


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def _rank(result: NodeResult) -> tuple[bool, int, str]:
    return (not result.feasible, -result.score, result.node)


def _node_answer(result: NodeResult, *, allocations: bool = True) -> dict[str, Any]:
    answer: dict[str, Any] = {"nodeName": result.node, "feasible": result.feasible}
    if result.feasible:
        answer["score"] = result.score
        if allocations:
            answer["allocations"] = [c.allocation for c in result.claims]
    else:
        answer["score"] = 0
        answer["reasons"] = [_reason(text) for text in result.reasons]
    return answer


def _reason(text: str) -> dict[str, Any]:
    """The engine's worded reason as the API's {claim, request, reason, message}."""
    match = _REQUEST.match(text)
    claim = match.group("claim") if match else ""
    request = match.group("request") if match else None
    reason = next((r for key, r in _REASONS if key in text), "Unsatisfiable")
    entry: dict[str, Any] = {"claim": claim, "reason": reason, "message": text}
    if request:
        entry["request"] = request
    return entry


class PoolIndexService:
    """The pool index as a service of its own, when no pool status service runs it."""

    def __init__(self, index: PoolIndex) -> None:
        self.index = index

    async def start(self) -> None:
        await self.index.start()

    async def close(self) -> None:
        await self.index.close()

    def readiness(self) -> dict[str, bool]:
        return {"pool-index": self.index.has_synced}

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
snapshot of the pools (every device a reservation holds is taken there), and the engine's
answer per node, best first (feasible, score, then name).

A reserving review holds what it answers, or says it could not. Its search and the marking
of the devices it picked as pending (``ReservationService.pending``, which also checks the
per-user cap) are one step under a lock of this replica, so concurrent reserving reviews
here never pick the same device; the store write follows outside the lock. A review that
loses the write to another replica's reservation searches again without the device the
conflict names; one that finds nothing while devices are pending here waits for those
reserves to settle and searches again. Devices of reservations deleted after the claim
cache's revision count as held for it (the claims holding them may not be in the cache
yet; see ``HeldReservations.released_after``), where claims come from this store. After ``RESERVE_ROUNDS`` rounds it answers every
node infeasible (``ReservationContention``): never ``feasible`` without a reservation.

The answer carries ``status.stateVersion`` (``stateversion``); with ``spec.answer: Scores``
each node's entry leaves out its allocations, and a review of no nodes answers only the
version; one whose ``spec.knownStateVersion`` is the version now answers ``unchanged``
without searching (the client's earlier answer stands). With allocations, a feasible node's
entry lists ``needsAttaching``: the devices a binder must wait for (KEP-5007). The pool
index's snapshot is taken again only when a pool changed, and the allocator's candidates,
selector results, groups and the greedy path's answers per claims shape are kept across
reviews while the devices and classes stay the same (``allocator.SharedCaches``), so a
review after a bind answers anew only the nodes reaching the pool it changed; such a
node's entry with allocations is encoded once and spliced into every answer replaying it
(``_entry``: an answer is for encoding with orjson, not for reading). The cyclic
collector is paused while a review searches and answers (``toolkit.collector``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, cast

import orjson

from ..allocator import (
    Allocator,
    Claim,
    NodeResult,
    Reason,
    ReviewBudget,
    SharedCaches,
    parse_claim,
)
from ..api.resource import ANSWER_SCORES, RESERVATION_SECONDS_DEFAULT, AllocationReview, DeviceID
from ..machinery import errors
from ..machinery.user import UserInfo
from ..pools import Node, PoolIndex, Pools
from ..reservations import MAX_PER_USER, ClaimRef, ReservationService, taken_device
from ..storage import Store
from ..toolkit.collector import collector_paused
from ..toolkit.options import non_negative, option
from .cluster import Cluster
from .stateversion import StateVersion

log = logging.getLogger("apiserver.allocation")

CATCH_UP_SECONDS = 10.0
"""How long a review waits for the caches to reach the store's revision before it answers
503 (a store that cannot be followed is unavailable, not a reason for a stale answer)."""
ASK_AGAIN_SECONDS = 0.5
"""How long a catch-up waits for a source's progress before asking for it again."""
FREEZE_AFTER = 5_000
"""Cache entries made since the last ``gc.freeze`` that warrant another."""
MAX_KNOWN_NODES = 100_000
"""Nodes whose allocator form is kept between reviews (names without a Node included)."""
RESERVE_ROUNDS = 32
"""Searches one reserving review may make: each follows a lost race (a device another
replica took, excluded from then on) or a wait for pending reserves here to settle."""
SCORED_ENTRIES = 32_768
"""Scores-only entries kept encoded (``_scored``): a few scores for each of the nodes."""


@dataclass
class AllocationOptions:
    max_reservations_per_user: int = option(
        "--max-reservations-per-user",
        MAX_PER_USER,
        "DeviceReservations one user's reserving AllocationReviews may hold at once;"
        " beyond it a reserving review is refused with 429 and nothing is held; 0 for no cap",
        check=non_negative,
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
        self._picking = asyncio.Lock()
        """Held while a reserving review searches and marks what it picked as pending."""
        self.version = StateVersion([*cluster.sources.all(), reservations.source], pools)
        self._snapshot: tuple[int, Pools] | None = None
        self._shared: SharedCaches | None = None
        self._known: dict[str, tuple[dict[str, Any] | None, Node]] = {}
        self._frozen_at = 0
        """The size of the shared caches when they were last frozen (see ``_freeze_new_caches``)."""

    async def review(self, review: AllocationReview, user: UserInfo) -> dict[str, Any]:
        await self._catch_up()
        spec = review.spec
        read = [self._claim(i, ref) for i, ref in enumerate(spec.claims)]
        claims = [claim for claim, _ in read]
        nodes, unknown = self._nodes(spec.node_names)
        reviewed = [_reviewed(stored) for _, stored in read if stored is not None]
        answer = _Answer(unknown, reviewed, allocations=spec.answer != ANSWER_SCORES)
        budget = ReviewBudget()  # one for the review, every round and node included
        version = self.version.current(self.reservations.held())
        if spec.known_state_version == version:  # validation keeps it from reserving reviews
            return {"stateVersion": version, "unchanged": True}
        if not nodes:
            return answer.status([], version)
        if not spec.reserve:
            # A review over thousands of nodes makes objects per node that live until it
            # is answered: collections every 700 of them took a quarter of its time.
            with collector_paused():
                results = await self._search(
                    claims, nodes, set(), budget, outcomes=answer.allocations, for_answer=True
                )
                answered = answer.of(results)
                del results  # freed before the collector is back, so it never walks them
            return answer.status(answered, version)
        return await self._reserving(review, claims, nodes, user, budget, answer)

    async def _search(
        self,
        claims: list[Claim],
        nodes: list[Node],
        taken: set[DeviceID],
        budget: ReviewBudget,
        *,
        outcomes: bool = True,
        for_answer: bool = False,
    ) -> list[NodeResult]:
        """Every node's answer, best first, over the pools with ``taken`` held too (and
        every device reservations hold, which the snapshot counts). ``for_answer``: the
        results are only encoded into an answer, so kept answers' outcomes may be shared
        with other reviews' (``Allocator.review``)."""
        pools, classes = self._pools(), self._classes()
        allocator = Allocator(pools, classes, reserved=taken)
        # Candidates, selector results and groups survive while devices and classes do.
        shared = SharedCaches.for_inputs(self._shared, pools, classes)
        if shared is not self._shared:
            self._frozen_at = 0
        self._shared = shared
        shared.attach(allocator)
        found = await allocator.review(claims, nodes, budget, outcomes=outcomes, shared=for_answer)
        results = _best_first(found)
        self._freeze_new_caches(shared)
        return results

    def _freeze_new_caches(self, shared: SharedCaches) -> None:
        """Once the caches grew by ``FREEZE_AFTER`` entries (the first reviews over a large
        cluster make a candidate per device), move them out of the cyclic collector's sight
        (``gc.freeze``, as the device view does after its build): they live until the
        devices change, and full collections walking them stalled reviews by half a second
        at 5,000 nodes."""
        size = len(shared.candidates) + len(shared.grouped)
        if size - self._frozen_at >= FREEZE_AFTER:
            gc.freeze()
            self._frozen_at = size

    async def _reserving(
        self,
        review: AllocationReview,
        claims: list[Claim],
        nodes: list[Node],
        user: UserInfo,
        budget: ReviewBudget,
        answer: _Answer,
    ) -> dict[str, Any]:
        spec = review.spec
        refs = _claim_refs(spec.claims)
        seconds = float(spec.reservation_seconds or RESERVATION_SECONDS_DEFAULT)
        lost: set[DeviceID] = set()
        """Devices another replica's reservation took from this review."""
        results: list[NodeResult] = []
        for _ in range(RESERVE_ROUNDS):
            with contextlib.ExitStack() as marks:
                async with self._picking:
                    version = self.version.current(self.reservations.held())
                    pending = {DeviceID(*d) for d in self.reservations.in_flight()}
                    taken = lost | pending | self._released()
                    with collector_paused():  # as a plain review's (see ``review``)
                        results = await self._search(claims, nodes, taken, budget)
                    best = next((r for r in results if r.feasible), None)
                    devices = [(d.driver, d.pool, d.device) for d in best.devices] if best else []
                    if devices:
                        # Marked before the lock is let go (no await in between), so the
                        # next search here leaves these devices alone.
                        marks.enter_context(self.reservations.pending(devices, user.name))
                if best is None and pending:
                    # A pending reserve that loses frees what this search skipped.
                    await self.reservations.settled(pending)
                    continue
                if best is None or not devices:  # no node fits, or all claims are allocated
                    return answer.status(answer.of(results), version)
                try:
                    reservation = await self.reservations.reserve(
                        best.node, devices, refs, seconds, user=user.name
                    )
                except errors.StatusError as err:
                    if err.code != 409:
                        raise
                    gone = taken_device(err, devices)
                    if gone is not None:
                        lost.add(DeviceID(*gone))
                    log.info("reserving on %s lost a race (%s); searching again", best.node, err)
                    continue
            status = answer.status(answer.of(results), version)
            status["reservation"] = {
                "name": reservation.metadata.name,
                "nodeName": best.node,
                "expirationTime": reservation.spec.expiration_time,
            }
            return status
        log.warning("a reserving review lost %d races; answering it unreserved", RESERVE_ROUNDS)
        return answer.status([_contended(r, refs) for r in results], version)

    def _released(self) -> set[DeviceID]:
        """Devices of reservations deleted since the revision the claim cache has reached,
        when the claims follow this store (in aggregated mode they follow the
        kube-apiserver's revisions, which cannot be compared)."""
        claims = self.cluster.sources.claims
        if not any(source is claims for source in self.cluster.own_sources()):
            return set()
        return self.reservations.devices.released_after(claims.revision)

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
            # Woken as soon as the sources behind reach it, or to ask for progress again.
            waits = [asyncio.ensure_future(s.reached(revision)) for s in behind]
            try:
                await asyncio.wait(waits, timeout=min(ask, deadline) - time.monotonic())
            finally:
                for wait in waits:
                    wait.cancel()
        await self.pools.settle()

    def _claim(self, index: int, ref: Any) -> tuple[Claim, dict[str, Any] | None]:
        """The claim to review, and the stored object it was read from (None: inline)."""
        if ref.spec is not None:
            name = ref.name or f"spec.claims[{index}]"
            inline = {"spec": ref.spec.model_dump(by_alias=True, exclude_none=True)}
            return parse_claim(name, inline), None
        key = f"{ref.namespace}/{ref.name}"
        stored = self.cluster.sources.claims.get(key)
        if stored is None:
            raise errors.not_found("resourceclaims", "resource.k8s.io", key)
        return parse_claim(key, stored), stored

    def _nodes(self, names: Sequence[str] | None) -> tuple[list[Node], set[str]]:
        """The nodes to answer (``names``, or every Node), and which names no Node has."""
        source = self.cluster.sources.nodes
        if names is None:
            objects = source.items()
            return [self._node(str(o["metadata"]["name"]), o) for o in objects], set()
        out, unknown = [], set()
        get, known = source.lookup(), self._known  # up to 5,000 names: the loop kept tight
        for name in names:
            obj = get(name)
            if obj is None:
                unknown.add(name)
            found = known.get(name)
            out.append(found[1] if found is not None and found[0] is obj else self._node(name, obj))
        return out, unknown

    def _node(self, name: str, obj: dict[str, Any] | None) -> Node:
        """The allocator's node for a Node object (None: no such Node), made again only
        when the object changed: a node keeps its caches' key across reviews."""
        found = self._known.get(name)
        if found is not None and found[0] is obj:
            return found[1]
        node = Node(name, _labels(obj) if obj is not None else {})
        if len(self._known) >= MAX_KNOWN_NODES:
            self._known.clear()
        self._known[name] = (obj, node)
        return node

    def _classes(self) -> dict[str, dict[str, Any]]:
        return {
            str(o["metadata"]["name"]): o
            for o in self.cluster.sources.classes.items()
            if isinstance(o.get("metadata"), dict)
        }


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def _contended(result: NodeResult, claims: Sequence[ClaimRef]) -> dict[str, Any]:
    """A node's answer to a reserving review that kept losing races for its devices."""
    if not result.feasible:
        return _node_answer(result)
    message = (
        f"devices that fit were taken by concurrent reservations {RESERVE_ROUNDS} times;"
        " nothing is held, retry"
    )
    return {
        "nodeName": result.node,
        "feasible": False,
        "score": 0,
        "reasons": [
            {
                "claim": f"{c.namespace}/{c.name}",
                "reason": "ReservationContention",
                "message": message,
            }
            for c in claims
        ],
    }


def _best_first(results: list[NodeResult]) -> list[NodeResult]:
    """Feasible first, then by score, highest first, then by name: three stable sorts on
    C-level keys, the last deciding first (one sort on a Python key per node cost more)."""
    results.sort(key=attrgetter("node"))
    results.sort(key=attrgetter("score"), reverse=True)
    results.sort(key=attrgetter("feasible"), reverse=True)
    return results


@dataclass(frozen=True)
class _Answer:
    """How a review is answered: which names no Node has, the stored claims as read, and
    whether each node's entry carries its allocations (not with ``answer: Scores``)."""

    unknown: set[str]
    claims: list[dict[str, Any]]
    allocations: bool = True

    def status(self, nodes: list[Any], version: str) -> dict[str, Any]:
        status: dict[str, Any] = {"nodes": nodes, "stateVersion": version}
        if self.claims:
            status["claims"] = self.claims
        return status

    def of(self, results: list[NodeResult]) -> list[Any]:
        """Each node's entry: dicts, and (with allocations) encoded ones (``_entry``)."""
        if not self.allocations:  # a feasible node's entry made inline: thousands of them
            return [
                _scored(r.node, r.score) if r.feasible else _node_answer(r, r.node in self.unknown)
                for r in results
            ]
        return [_entry(r, r.node in self.unknown) for r in results]


def _claim_refs(claims: Sequence[Any]) -> list[ClaimRef]:
    """The claims a reservation is for. An inline claim is named as the review names it
    (in "default" without a namespace): no stored allocation will release it; it expires."""
    return [
        ClaimRef(ref.namespace or "default", ref.name or f"inline-{i}")
        for i, ref in enumerate(claims)
    ]


def _reviewed(claim: dict[str, Any]) -> dict[str, Any]:
    """A stored claim as the answer read it (``status.claims``)."""
    meta = claim.get("metadata") or {}
    return {
        "namespace": str(meta.get("namespace") or ""),
        "name": str(meta.get("name") or ""),
        "uid": str(meta.get("uid") or ""),
        "resourceVersion": str(meta.get("resourceVersion") or ""),
        "allocated": bool((claim.get("status") or {}).get("allocation")),
    }


_KEPT_ENTRY = "allocation-review-entry"
"""What a feasible node's entry, encoded, is kept under in its kept answer
(``NodeResult.kept``)."""


def _entry(result: NodeResult, unknown: bool) -> dict[str, Any] | orjson.Fragment:
    """A node's entry with its allocations. A feasible node's kept answer is encoded once
    per claims' request names and configurations and spliced into every answer replaying
    it: a review over thousands of nodes re-encoding their entries spent a fifth of its
    time on it. So an answer's entries are for encoding with orjson, not for reading."""
    if result.feasible and result.kept is not None:
        key = (_KEPT_ENTRY, result.kept_key)
        found = result.kept.get(key)
        if found is None:
            found = result.kept[key] = orjson.Fragment(orjson.dumps(_node_answer(result)))
        return cast(orjson.Fragment, found)
    return _node_answer(result, unknown)


@functools.lru_cache(maxsize=SCORED_ENTRIES)
def _scored(node: str, score: int) -> orjson.Fragment:
    """A feasible node's entry without allocations, encoded: a scores-only review over
    thousands of nodes gives the same few entries again and again, and its dicts, made
    anew, were walked by the cyclic collector as soon as the review let it run again."""
    entry = _node_answer(NodeResult(node, True, score), allocations=False)
    return orjson.Fragment(orjson.dumps(entry))


def _with_allocations(answer: dict[str, Any], result: NodeResult) -> dict[str, Any]:
    """A feasible node's entry with its claims' allocations and the devices to attach."""
    answer["allocations"] = [c.allocation for c in result.claims]
    attach = [d for c in result.claims for d in c.to_attach]
    if attach:
        answer["needsAttaching"] = [
            {"driver": d.driver, "pool": d.pool, "device": d.device} for d in attach
        ]
    return answer


def _node_answer(
    result: NodeResult, unknown: bool = False, *, allocations: bool = True
) -> dict[str, Any]:
    """The node's entry; ``unknown``: no Node of that name exists (said first when the
    claims do not fit, since it is the likely cause: a mistyped name); ``allocations``:
    whether a feasible node's entry carries them."""
    answer: dict[str, Any] = {"nodeName": result.node, "feasible": result.feasible}
    if result.feasible:
        answer["score"] = result.score
        if allocations:
            _with_allocations(answer, result)
    else:
        answer["score"] = 0
        answer["reasons"] = [_reason(r) for r in result.explanations]
        if unknown:
            answer["reasons"].insert(
                0,
                {
                    "claim": "",
                    "reason": "NodeNotFound",
                    "message": f"no Node {result.node} is known: only devices published "
                    "for that node name were considered",
                },
            )
    return answer


def _reason(reason: Reason) -> dict[str, Any]:
    """The engine's reason as the API's {claim, request, reason, message}."""
    entry: dict[str, Any] = {
        "claim": reason.claim,
        "reason": reason.code,
        "message": reason.message,
    }
    if reason.request:
        entry["request"] = reason.request
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

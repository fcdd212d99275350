"""``resource.k8s.io/v1alpha3`` AllocationReview: may these claims be allocated, on which
nodes, with which devices — asked and answered at once, never stored (like
SubjectAccessReview). A reserving review also holds the devices chosen on the best node in
a ``DeviceReservation``.

The shape is fixed so the scheduler shim and other clients can rely on it: ``spec.claims``
(stored claims by namespace and name, or inline specs), ``spec.nodeNames`` (candidates;
every known node when omitted; at most ``NODES_MAX``), ``spec.reserve`` and
``spec.reservationSeconds`` (default 30, at most 600), ``spec.answer`` (``Allocations``,
the default, or ``Scores``: feasibility, score and reasons without the allocations, a few
dozen bytes per node, for a scheduler's filter and score); ``status.nodes`` one entry per
candidate, best first (score, then name), each with the upstream AllocationResult per claim
or the reasons it is infeasible (``NotSearched`` for a node the review's one search budget
did not reach), ``status.reservation`` when devices were reserved, and
``status.stateVersion``, which is the same for two reviews answered from the same state.
A client holding an answer sends its version as ``spec.knownStateVersion``: while nothing
changed the review answers ``status.unchanged: true`` without nodes (one request whether or
not the earlier answer still stands).
"""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel, Time
from ..meta import KindModel
from .resourceclaim import AllocationResult, ResourceClaimSpec

RESERVATION_SECONDS_DEFAULT = 30
ANSWER_ALLOCATIONS = "Allocations"
ANSWER_SCORES = "Scores"
ANSWERS = (ANSWER_ALLOCATIONS, ANSWER_SCORES)
RESERVATION_SECONDS_MAX = 600
STATE_VERSION_MAX = 64
"""The longest ``spec.knownStateVersion`` accepted (the server's own are 22 characters)."""
CLAIMS_MAX = 32
"""Claims reviewed together: a pod may reference at most 32 ResourceClaims upstream."""
NODES_MAX = 5000
"""Candidate nodes named in one review: a cluster's node limit, so that kube-scheduler's
extender, which may pass every feasible node, is never refused. The search work does not
grow with it (one budget per review); it bounds the request and the answer."""


class ClaimReference(APIModel):
    """A claim to allocate: a stored ResourceClaim, or an inline spec that is not stored."""

    namespace: str | None = Field(
        None,
        description="Namespace of the claim. Required for a stored claim, which the caller "
        "must be allowed to get (else 403, whether or not it exists).",
    )
    name: str | None = Field(
        None,
        description="Name of the stored ResourceClaim; with an inline spec, an optional name "
        "used in reasons.",
    )
    spec: ResourceClaimSpec | None = Field(
        None,
        description="An inline claim, validated as a ResourceClaim's spec on create and never "
        "stored. When unset, the stored claim namespace/name is reviewed.",
    )


class AllocationReviewSpec(APIModel):
    """What to review."""

    claims: list[ClaimReference] = Field(
        description="Claims allocated together, in this order, with no device shared.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    node_names: list[str] | None = Field(
        None,
        description="Candidate nodes. Omitted: every node the server knows. A name with no "
        f"Node object is a node without labels. At most {NODES_MAX}. One search budget serves "
        "the whole review: nodes it did not reach are answered infeasible with the reason "
        "NotSearched, nodes whose search ran out of its share with BudgetExhausted.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    reserve: bool | None = Field(
        None,
        description="Hold the devices chosen on the best feasible node in a DeviceReservation "
        "until it expires, is deleted, or a claim's allocation of them is stored (when every "
        "claim is allocated already there is nothing to hold, and no reservation is made). "
        "The caller needs create on devicereservations.",
    )
    reservation_seconds: int | None = Field(
        None,
        description="How long a reservation lasts, in seconds: default 30, at most 600.",
    )
    answer: str | None = Field(
        None,
        description="What each node's entry carries. Allocations (the default): the "
        "AllocationResult of every claim on a feasible node. Scores: feasibility, score and "
        "reasons only, without allocations (what a scheduler's filter and score need, a few "
        "dozen bytes per node); not with reserve, whose devices a client must be told. With "
        "nodeNames set to an empty list, a review answers only status.stateVersion.",
    )
    known_state_version: str | None = Field(
        None,
        description="The status.stateVersion of an earlier answer the client holds for the "
        "same claims and nodes. While the state is still at that version the review "
        "answers only status.stateVersion, with status.unchanged true (the earlier answer "
        f"stands); otherwise it answers in full. At most {STATE_VERSION_MAX} characters; "
        "not with reserve, which always searches.",
    )


class ReviewReason(APIModel):
    """Why a claim cannot be allocated on a node."""

    claim: str = Field(description="The claim (namespace/name, or the inline claim's name).")
    request: str | None = Field(None, description="The request or request/subrequest, if any.")
    reason: str = Field(
        description="A CamelCase reason, e.g. NoCandidates (no device of the class is "
        "reachable from the node), NoMatchingDevices (the request's selectors exclude every "
        "device of its class there), Unsatisfiable (too few free: others hold them), "
        "ConstraintUnsatisfiable, CountersExhausted, CapacityExhausted, PoolUnusable, "
        "TooManyDevices, InvalidClaim, AllocatedElsewhere; BudgetExhausted when the node's "
        "search ran out of its share of the review's budget, NotSearched when the budget was "
        "spent before the node was searched (neither says the claims cannot fit there); "
        "NodeNotFound, beside the others, when no Node of that name is known (only devices "
        "published for that node name were considered)."
    )
    message: str = Field(description="What removed the candidates, with counts.")


class AllocatedDevice(APIModel):
    """A device of an allocation, named as its allocation result names it."""

    driver: str = Field(description="The DRA driver of the device.")
    pool: str = Field(description="The pool of the device.")
    device: str = Field(description="The device's name within the pool.")


class NodeAllocation(APIModel):
    """The answer for one candidate node."""

    node_name: str = Field(description="The candidate node.")
    feasible: bool = Field(description="Whether every claim can be allocated on the node.")
    score: int | None = Field(
        None, description="0-100, higher is better (node-local devices over fabric ones)."
    )
    allocations: list[AllocationResult] | None = Field(
        None,
        description="One upstream AllocationResult per spec.claims entry, in order, when feasible.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    needs_attaching: list[AllocatedDevice] | None = Field(
        None,
        description="With allocations: the devices they chose that must be attached to the "
        "node before the pod binds (KEP-5007): fabric devices not attached yet "
        "(kubernetes.io/needs-attaching true in the device view) and devices with binding "
        "conditions. Left out when there are none.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    reasons: list[ReviewReason] | None = Field(
        None,
        description="Why the node is infeasible.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class ReservationReference(APIModel):
    """The DeviceReservation a reserving review made."""

    name: str = Field(description="Name of the DeviceReservation.")
    node_name: str = Field(description="The node the devices are held for.")
    expiration_time: Time = Field(description="When the reservation expires.")


class ReviewedClaim(APIModel):
    """A stored claim as the review read it."""

    namespace: str = Field(description="The claim's namespace.")
    name: str = Field(description="The claim's name.")
    uid: str = Field(description="The claim's uid.")
    resource_version: str = Field(description="The claim's resourceVersion the answer read.")
    allocated: bool = Field(description="Whether the claim had an allocation then.")


class AllocationReviewStatus(APIModel):
    """The answer, computed when the review is created."""

    nodes: list[NodeAllocation] | None = Field(
        None,
        description="One entry per candidate node, best first (score, then name).",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    reservation: ReservationReference | None = Field(
        None, description="The reservation, with spec.reserve and a feasible node."
    )
    claims: list[ReviewedClaim] | None = Field(
        None,
        description="The stored claims of spec.claims, in order, as the answer read them "
        "(inline claims are left out): a client writing a claim's status after a reserving "
        "review can pin the write to this resourceVersion instead of reading the claim "
        "again; a conflict means the claim changed since.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    state_version: str | None = Field(
        None,
        description="An opaque version of the state the answer was computed from (devices, "
        "allocations, reservations, classes, nodes): two reviews of the same claims and "
        "nodes that report the same version got the same answer. Comparable only between "
        "answers of the same server.",
    )
    unchanged: bool | None = Field(
        None,
        description="True when spec.knownStateVersion is the state's version now: nothing "
        "the answer depends on changed, the client's earlier answer stands and nodes is "
        "left out.",
    )


class AllocationReview(KindModel):
    """Asks which devices would satisfy claims on candidate nodes; answered at once and never
    stored."""

    spec: AllocationReviewSpec = Field(description="The claims and candidate nodes.")
    status: AllocationReviewStatus | None = Field(
        None, description="The answer, set by the server."
    )

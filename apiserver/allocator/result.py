"""What an allocation looks like on the way out: upstream's AllocationResult, and the score.

Per claim, ``allocation_result`` gives ``devices.results[]`` in pick order (``request`` is
``request`` or ``request/subrequest``; ``adminAccess`` only when true; the request's
tolerations and the device's binding conditions copied, as upstream; for a share of a
device that allows multiple allocations a new ``shareID`` and, if the device has
capacities, the ``consumedCapacity`` of every one of them), ``devices.config`` (each class's
config once, ``FromClass``, for the requests of that class; then the claim's config
entries, ``FromClaim``, that name a request of the allocation or no request at all; an
entry that names every request of the claim has its ``requests`` dropped, as upstream) and
``nodeSelector``, as upstream's ``createNodeSelector``: pinned to the node by
``metadata.name`` if any device is node-local (its slice's or, with
``perDeviceNodeSelection``, its own ``nodeName``) or binds to its node; else ONE term that
ANDs the requirements of every device's selector (each a single term, as validation
demands; requirements already in the term are not repeated), so the pod goes only where
every device is reachable; else none (usable everywhere: ``allNodes`` devices).

Score (0-100, higher is better), the KEP-5007 preference made a number: every device chosen
on the node is worth 100 when it needs no attaching, 50 when it is a fabric device already
attached, 0 when it is a fabric device that still needs attaching; the node's score is the
mean over the devices its allocation chose, rounded down; a node where nothing had to be
chosen scores 100.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..api.resource import NODE_NAME, NODE_SELECTOR, quantity_text
from ..toolkit import JSON
from .candidates import ATTACHED, LOCAL, Candidate
from .claims import Alternative, Claim

RANK_POINTS = {LOCAL: 100, ATTACHED: 50}


def score(picks: Iterable[tuple[Alternative, Candidate]]) -> int:
    return score_of(c for _, c in picks)


def score_of(candidates: Iterable[Candidate]) -> int:
    """The score of a node where ``candidates`` were chosen."""
    points = [RANK_POINTS.get(c.rank, 0) for c in candidates]
    return sum(points) // len(points) if points else 100


def pinned(node: str) -> JSON:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        ]
    }


def node_selector(picks: Sequence[tuple[Alternative, Candidate]], node: str) -> JSON | None:
    if any(c.placement.kind == NODE_NAME or c.binds_to_node for _, c in picks):
        return pinned(node)
    fields: list[JSON] = []
    expressions: list[JSON] = []
    for _, candidate in picks:
        place = candidate.placement
        if place.kind != NODE_SELECTOR or not place.node_selector:
            continue
        terms = place.node_selector.get("nodeSelectorTerms") or ()
        if not terms or not isinstance(terms[0], dict):
            continue
        # Validation allows one term; were there more, the first is what upstream reads.
        term = terms[0]
        _extend(fields, term.get("matchFields"))
        _extend(expressions, term.get("matchExpressions"))
    out: JSON = {}
    if expressions:
        out["matchExpressions"] = expressions
    if fields:
        out["matchFields"] = fields
    return {"nodeSelectorTerms": [out]} if out else None


def _extend(into: list[JSON], requirements: Any) -> None:
    """Add the requirements ``into`` lacks: same key, operator and set of values is the same
    requirement (upstream's ``containsNodeSelectorRequirement``)."""
    for requirement in requirements or ():
        if not isinstance(requirement, dict):
            continue
        values = set(requirement.get("values") or ())
        if not any(
            r.get("key") == requirement.get("key")
            and r.get("operator") == requirement.get("operator")
            and set(r.get("values") or ()) == values
            for r in into
        ):
            into.append(requirement)


def _result(
    alternative: Alternative, candidate: Candidate, consumed: dict[str, int] | None
) -> JSON:
    out: JSON = {
        "request": alternative.name,
        "driver": candidate.id.driver,
        "pool": candidate.id.pool,
        "device": candidate.id.device,
    }
    if alternative.admin:
        out["adminAccess"] = True
    if alternative.tolerations:
        out["tolerations"] = [dict(t) for t in alternative.tolerations]
    for name in ("bindingConditions", "bindingFailureConditions"):
        if candidate.device.get(name):
            out[name] = list(candidate.device[name])
    if consumed is not None:
        out["shareID"] = str(uuid.uuid4())
        if consumed:
            out["consumedCapacity"] = {name: quantity_text(a) for name, a in consumed.items()}
    return out


def allocation_result(
    claim: Claim,
    picks: list[tuple[Alternative, Candidate]],
    classes: Mapping[str, JSON],
    node: str,
    shares: Sequence[dict[str, int] | None] = (),
) -> JSON:
    config: list[JSON] = []
    by_class: dict[str, list[str]] = {}
    for alternative, _ in picks:
        names = by_class.setdefault(alternative.class_name, [])
        if alternative.name not in names:
            names.append(alternative.name)
    for class_name, requests in by_class.items():
        for entry in (classes.get(class_name) or {}).get("spec", {}).get("config") or ():
            if isinstance(entry, dict) and entry.get("opaque") is not None:
                config.append({"source": "FromClass", "requests": requests, **entry})
    allocated = {a.name for a, _ in picks} | {a.request for a, _ in picks}
    for entry in claim.config:
        requests = entry.get("requests") or []
        if not requests or any(r in allocated for r in requests):
            config.append({"source": "FromClaim", **entry})
    consumed = list(shares) or [None] * len(picks)
    devices: JSON = {
        "results": [_result(a, c, s) for (a, c), s in zip(picks, consumed, strict=True)]
    }
    _clear_covering_all(claim, picks, config)
    if config:
        devices["config"] = config
    out: JSON = {"devices": devices}
    selector = node_selector(picks, node)
    if selector is not None:
        out["nodeSelector"] = selector
    return out


def _clear_covering_all(
    claim: Claim, picks: list[tuple[Alternative, Candidate]], config: list[JSON]
) -> None:
    """A config entry naming every request of the claim (each by its name or by the chosen
    subrequest's) loses its ``requests``: empty means all, as upstream writes it."""
    chosen = {a.request: a.name for a, _ in picks}
    for entry in config:
        requests = entry.get("requests") or ()
        if requests and all(
            r.name in requests or chosen.get(r.name) in requests for r in claim.requests
        ):
            del entry["requests"]

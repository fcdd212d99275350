"""Claims as the search reads them: parsed once from ResourceClaimSpec-shaped JSON.

A ``Claim`` has requests in order; each ``Request`` has one or more ``Alternative``s — the
request itself (``exactly``) or its ``firstAvailable`` subrequests, tried in order — and
``ConstraintSpec``s, each naming the requests it covers. Defaults are upstream's
(``allocationMode`` ExactCount, ``count`` 1). Parsing never raises: what cannot be used
becomes ``Claim.problem``, which the engine reports as the claim's reason.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import orjson

from ..api.resource import AllocatedDevice, as_dict, claim_results, requested
from ..toolkit import JSON

MAX_DEVICES_PER_CLAIM = 32
"""Upstream's ``AllocationResultsMaxSize``: at most 32 devices per claim."""


@dataclass(frozen=True)
class Alternative:
    """One way to satisfy a request: the request itself or one of its subrequests."""

    name: str
    """``request`` or ``request/subrequest``: what results name."""
    request: str
    class_name: str
    selectors: tuple[str, ...] = ()
    all: bool = False
    count: int = 1
    admin: bool = False
    tolerations: tuple[JSON, ...] = ()
    index: int = 0
    """Position among the request's subrequests (0 for ``exactly``)."""
    capacity: tuple[tuple[str, int], ...] = ()
    """``capacity.requests`` in nano units, sorted by name (consumable capacity)."""

    @functools.cached_property
    def key(self) -> tuple[Any, ...]:
        """What decides which devices are candidates (not the name or count)."""
        return (
            self.class_name,
            self.selectors,
            self.admin,
            tuple(sorted(repr(sorted(t.items())) for t in self.tolerations)),
            self.capacity,
        )


@dataclass(frozen=True)
class Request:
    name: str
    alternatives: tuple[Alternative, ...]


@dataclass(frozen=True)
class ConstraintSpec:
    index: int
    requests: tuple[str, ...]
    """``request`` or ``request/subrequest`` names; empty covers every request."""
    match_attribute: str | None = None
    distinct_attribute: str | None = None
    expression: str | None = None

    @property
    def label(self) -> str:
        if self.match_attribute is not None:
            return f"constraint #{self.index} (matchAttribute {self.match_attribute})"
        if self.distinct_attribute is not None:
            return f"constraint #{self.index} (distinctAttribute {self.distinct_attribute})"
        return f"constraint #{self.index} (cel)"

    def covers(self, alternative: Alternative) -> bool:
        return (
            not self.requests
            or alternative.request in self.requests
            or alternative.name in self.requests
        )


@dataclass(frozen=True)
class Claim:
    name: str
    """How reasons name the claim (``namespace/name`` or anything the caller chose)."""
    requests: tuple[Request, ...] = ()
    constraints: tuple[ConstraintSpec, ...] = ()
    config: tuple[JSON, ...] = ()
    allocated: tuple[AllocatedDevice, ...] = ()
    """The claim's allocation, if it has one: it is kept, and its devices are taken."""
    allocation: JSON | None = None
    problem: str | None = None

    @functools.cached_property
    def simple(self) -> bool:
        """No constraints, and each request has one alternative of a fixed count without
        admin access: taking the first free candidates is the search's first branch."""
        return not self.constraints and all(
            len(r.alternatives) == 1 and not r.alternatives[0].all and not r.alternatives[0].admin
            for r in self.requests
        )

    @functools.cached_property
    def result_key(self) -> tuple[Any, ...]:
        """What an allocation result reads of the claim besides the devices picked for it:
        its request names and its configuration (the shape covers the rest)."""
        names = tuple(a.name for r in self.requests for a in r.alternatives)
        return names, orjson.dumps(self.config, option=orjson.OPT_SORT_KEYS)

    @functools.cached_property
    def minimum_devices(self) -> int:
        """The fewest devices an allocation of the claim can have (``All`` counts none)."""
        return sum(
            min((a.count for a in r.alternatives if not a.all), default=0) for r in self.requests
        )

    @functools.cached_property
    def covering(self) -> dict[str, tuple[int, ...]]:
        """Per alternative name, the indexes of the constraints that cover it."""
        return {
            a.name: tuple(i for i, c in enumerate(self.constraints) if c.covers(a))
            for r in self.requests
            for a in r.alternatives
        }


def _alternative(raw: JSON, name: str, request: str, index: int, admin: bool) -> Alternative:
    selectors = tuple(
        str(as_dict(s.get("cel")).get("expression", ""))
        for s in raw.get("selectors") or ()
        if isinstance(s, dict)
    )
    mode = raw.get("allocationMode") or "ExactCount"
    count = raw.get("count")
    return Alternative(
        name=name,
        request=request,
        class_name=str(raw.get("deviceClassName", "")),
        selectors=selectors,
        all=mode == "All",
        count=count if isinstance(count, int) and not isinstance(count, bool) else 1,
        admin=admin,
        tolerations=tuple(t for t in raw.get("tolerations") or () if isinstance(t, dict)),
        index=index,
        capacity=requested(raw.get("capacity")),
    )


def parse_claim(name: str, claim: JSON) -> Claim:
    """A claim from a ResourceClaim (``spec`` and ``status``) or from a bare spec."""
    spec = as_dict(claim.get("spec")) if "spec" in claim else claim
    devices = as_dict(spec.get("devices"))
    requests: list[Request] = []
    problem = None
    for raw in devices.get("requests") or ():
        if not isinstance(raw, dict):
            continue
        request = str(raw.get("name", ""))
        exactly, subs = raw.get("exactly"), raw.get("firstAvailable")
        alternatives: tuple[Alternative, ...]
        if isinstance(exactly, dict):
            admin = bool(exactly.get("adminAccess"))
            alternatives = (_alternative(exactly, request, request, 0, admin),)
        elif isinstance(subs, list) and subs:
            alternatives = tuple(
                _alternative(s, f"{request}/{s.get('name', '')}", request, i, False)
                for i, s in enumerate(subs)
                if isinstance(s, dict)
            )
        elif "deviceClassName" in raw:  # the v1beta1 shape: the request itself is exact
            alternatives = (_alternative(raw, request, request, 0, bool(raw.get("adminAccess"))),)
        else:
            problem = f"request {request}: neither exactly nor firstAvailable is set"
            continue
        for alternative_raw in (exactly,) if isinstance(exactly, dict) else subs or (raw,):
            mode = as_dict(alternative_raw).get("allocationMode")
            if mode not in (None, "", "ExactCount", "All"):
                # A mode from a newer API: treating it as ExactCount would hand out the
                # wrong number of devices, so the claim cannot be allocated (as upstream).
                problem = f"request {request}: unsupported allocationMode {mode}"
        requests.append(Request(request, alternatives))
    constraints = []
    for i, raw in enumerate(devices.get("constraints") or ()):
        if not isinstance(raw, dict):
            continue
        names = tuple(str(r) for r in raw.get("requests") or ())
        expression = as_dict(raw.get("cel")).get("expression")
        spec_ = ConstraintSpec(
            index=i,
            requests=names,
            match_attribute=raw.get("matchAttribute"),
            distinct_attribute=raw.get("distinctAttribute"),
            expression=expression if isinstance(expression, str) else None,
        )
        if (spec_.match_attribute, spec_.distinct_attribute, spec_.expression) == (None,) * 3:
            problem = f"constraint #{i}: unknown constraint type"
        constraints.append(spec_)
    allocation = as_dict(claim.get("status")).get("allocation")
    return Claim(
        name=name,
        requests=tuple(requests),
        constraints=tuple(constraints),
        config=tuple(c for c in devices.get("config") or () if isinstance(c, dict)),
        allocated=claim_results(claim),
        allocation=allocation if isinstance(allocation, dict) else None,
        problem=problem,
    )

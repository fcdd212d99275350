"""Devices as the search sees them, and which of them can serve a request on a node.

A ``Candidate`` is made once per device version (a new ``DeviceState`` is a new version):
its id, pool, placement, taints, the counters it consumes, its rank for KEP-5007
preference, its CEL value (converted on first use) and its ``signature``: everything that
can decide a selector, a constraint, a counter, a taint, a placement or the output, i.e.
all of the device but its name. Devices with equal signatures are interchangeable: swapping
two of them in any allocation gives an allocation that is valid exactly when the first one
was (selectors and CEL constraints see driver, attributes and capacity, never the name;
counters are per pool and equal; taints and placement are equal). A ``Group`` holds them,
and the search tries one representative per group.

Rank (KEP-5007 preference, and the score): 0 a device that needs no attaching (node-local,
or reachable through ``allNodes``/``nodeSelector`` without being a fabric device); 1 a fabric
device already attached (attribute ``kubernetes.io/needs-attaching`` false); 2 a fabric
device that still needs attaching (``kubernetes.io/needs-attaching`` true, or upstream
``bindingConditions``).

Order (which candidates the search tries first): upstream's for binding conditions, the
KEP-5007 preference within it. Upstream moves every pool that has a device with
``bindingConditions`` after the pools that have none and keeps the slice and device order
inside a pool (``pools_incubating.go``), so a pool's devices without conditions are not
preferred over its devices with them; the ``kubernetes.io/needs-attaching`` attribute then
orders node-local, attached and to-be-attached devices.

A device that allows multiple allocations (``shared``) is interchangeable with no other:
what is left of its capacity depends on its shares, not on its description.

``Filter`` decides, per request alternative, which devices reachable from a node are
candidates: usable pool, class selectors, request selectors (results cached per device
version and selector), tolerated taints. What is held and what counters remain change
with every allocation, so the search checks those when it picks. ``Tally`` counts, for
explanations, what removed each device.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..api.resource import (
    NEEDS_ATTACHING,
    NODE_NAME,
    Capacity,
    Counters,
    DeviceID,
    Placement,
    device_capacities,
    share,
)
from ..cel import DeviceValue, EvaluationError, Program, device_value, evaluate
from ..pools import BLOCKING_EFFECTS, PoolKey, PoolState, Reach
from ..toolkit import JSON
from .claims import Alternative

LOCAL, ATTACHED, NEEDS_ATTACH = 0, 1, 2
RANK_NAMES = ("node-local", "attached fabric", "fabric needing attach")


def _canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _attribute_rank(attributes: JSON) -> int:
    """LOCAL for a device that is not a fabric device by its ``kubernetes.io/needs-attaching``
    attribute, else whether it is attached already (ATTACHED) or not (NEEDS_ATTACH)."""
    attribute = attributes.get(NEEDS_ATTACHING)
    if isinstance(attribute, dict) and isinstance(attribute.get("bool"), bool):
        return NEEDS_ATTACH if attribute["bool"] else ATTACHED
    return LOCAL


class Candidate:
    __slots__ = (
        "_capacities",
        "_sets",
        "_value",
        "attributes",
        "binds_to_node",
        "consumes",
        "device",
        "driver",
        "id",
        "order",
        "placement",
        "pool",
        "rank",
        "shared",
        "signature",
        "state",
        "taints",
    )

    def __init__(self, reach: Reach, late: bool = False) -> None:
        """``late``: the device's pool has devices with binding conditions (upstream tries
        such pools last)."""
        facts = reach.device
        assert facts.state is not None
        self.state = facts.state
        self.device: JSON = facts.state.device
        self.pool: PoolState = reach.pool
        self.driver = reach.pool.gathered.driver
        self.id = DeviceID(self.driver, reach.pool.gathered.pool, facts.name)
        self.placement: Placement = reach.placement
        self.consumes: tuple[tuple[str, Counters], ...] = facts.consumes
        self.attributes: JSON = self.device.get("attributes") or {}
        self.taints: tuple[JSON, ...] = tuple(
            t
            for t in self.device.get("taints") or ()
            if isinstance(t, dict) and t.get("effect") in BLOCKING_EFFECTS
        )
        self.binds_to_node = bool(self.device.get("bindsToNode"))
        self.shared = self.device.get("allowMultipleAllocations") is True
        attribute_rank = _attribute_rank(self.attributes)
        self.rank = NEEDS_ATTACH if self.device.get("bindingConditions") else attribute_rank
        self.order = (late, attribute_rank)
        self._value: DeviceValue | EvaluationError | None = None
        self._capacities: dict[str, Capacity] | None = None
        self._sets: dict[str, frozenset[tuple[str, Any]] | None] = {}
        self.signature = (
            self.id if self.shared else None,
            late,
            reach.pool.key,
            self.placement.kind,
            self.placement.node_name,
            _canonical(self.placement.node_selector),
            self.rank,
            _canonical({k: v for k, v in self.device.items() if k not in _NOT_IN_SIGNATURE}),
            _canonical([{k: v for k, v in t.items() if k != "timeAdded"} for t in self.taints]),
        )

    @property
    def local(self) -> bool:
        return self.placement.kind == NODE_NAME

    @property
    def capacities(self) -> dict[str, Capacity]:
        if self._capacities is None:
            self._capacities = device_capacities(self.device)
        return self._capacities

    def value(self) -> DeviceValue | EvaluationError:
        if self._value is None:
            try:
                self._value = device_value(self.driver, self.device)
            except EvaluationError as err:
                self._value = err
        return self._value

    def attribute(self, name: str) -> frozenset[tuple[str, Any]] | None:
        """The values of a fully qualified attribute as a set of (type, value), looked up as
        upstream: the exact name, else the bare id when the domain is the driver's. A scalar
        is a set of one, a list attribute (``ints``, ``strings``…) the set of its elements,
        typed like the scalar (``int``, ``string``…) so ``string: a`` and ``strings: [a, b]``
        share ``a``. None when missing, empty or of no known type. Kept per name: a
        constraint asks again on every search step that tries the device."""
        try:
            return self._sets[name]
        except KeyError:
            values = self._sets[name] = self._attribute(name)
            return values

    def _attribute(self, name: str) -> frozenset[tuple[str, Any]] | None:
        found = self.attributes.get(name)
        if found is None:
            domain, _, ident = name.rpartition("/")
            if domain == self.driver:
                found = self.attributes.get(ident)
        if not isinstance(found, dict):
            return None
        for kind, value in found.items():
            if value is None:
                continue
            if kind in _SCALARS:
                return frozenset(((kind, value),))
            base = _LISTS.get(kind)
            if base is None or not isinstance(value, list) or not value:
                return None
            return frozenset((base, v) for v in value)
        return None


_NOT_IN_SIGNATURE = frozenset({"name", "nodeName", "nodeSelector", "allNodes"})
_SCALARS = frozenset({"int", "bool", "string", "version"})
_LISTS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}


@dataclass(eq=False)
class Group:
    """Interchangeable candidates (one, when symmetry reduction is off)."""

    members: list[Candidate]
    index: int = 0
    """Position in the global order of signatures: constraint memos key on it."""

    @property
    def first(self) -> Candidate:
        return self.members[0]


def tolerated(taint: JSON, tolerations: Iterable[JSON]) -> bool:
    """Whether any toleration tolerates the taint (upstream's ``ToleratesTaint``)."""
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key")
        if key and key != taint.get("key"):
            continue
        operator = toleration.get("operator") or "Equal"
        if operator == "Exists":
            return True
        if operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


@dataclass
class Tally:
    """What removed the devices of one alternative, for its explanation."""

    reachable: int = 0
    unusable_pools: dict[PoolKey, int] = field(default_factory=dict)
    class_excluded: int = 0
    selector_excluded: dict[int, int] = field(default_factory=dict)
    selector_errors: dict[int, str] = field(default_factory=dict)
    tainted: int = 0
    capacity_short: int = 0
    """Devices without a requested capacity, or with less of it (or a policy that forbids
    the amount) than the request needs even unshared."""
    candidates: list[Candidate] = field(default_factory=list)


class SelectorCache:
    """Selector results per (device version, program); off means every call evaluates."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._results: dict[tuple[int, str], tuple[Any, bool | str]] = {}
        self.evaluations = 0

    def outcome(self, program: Program, candidate: Candidate) -> bool | str:
        """True, False, or the message of a runtime error."""
        key = (id(candidate.state), program.expression)
        if self.enabled:
            found = self._results.get(key)
            if found is not None and found[0] is candidate.state:
                return found[1]
        value = candidate.value() if self.enabled else _fresh_value(candidate)
        result: bool | str
        if isinstance(value, EvaluationError):
            result = str(value)
        else:
            self.evaluations += 1
            try:
                result = evaluate(program, value)
            except EvaluationError as err:
                result = str(err)
        if self.enabled:
            self._results[key] = (candidate.state, result)
        return result


def _fresh_value(candidate: Candidate) -> DeviceValue | EvaluationError:
    try:
        return device_value(candidate.driver, candidate.device)
    except EvaluationError as err:
        return err


def filter_candidates(
    alternative: Alternative,
    reachable: Iterable[Candidate],
    class_programs: tuple[Program, ...],
    request_programs: tuple[Program, ...],
    cache: SelectorCache,
) -> Tally:
    """The alternative's candidates among the devices a node reaches, with a tally of what
    removed the others (held devices and counters are the search's business)."""
    tally = Tally()
    driver_of_class: set[str] = set()
    for candidate in reachable:
        tally.reachable += 1
        if not candidate.pool.gathered.usable:
            # counted only if the class would have taken the device: checked below
            pass
        ok = True
        for program in class_programs:
            outcome = cache.outcome(program, candidate)
            if outcome is not True:
                ok = False
                break
        if not ok:
            tally.class_excluded += 1
            continue
        driver_of_class.add(candidate.driver)
        if not candidate.pool.gathered.usable:
            key = candidate.pool.key
            tally.unusable_pools[key] = tally.unusable_pools.get(key, 0) + 1
            continue
        for i, program in enumerate(request_programs):
            outcome = cache.outcome(program, candidate)
            if outcome is not True:
                ok = False
                tally.selector_excluded[i] = tally.selector_excluded.get(i, 0) + 1
                if isinstance(outcome, str):
                    tally.selector_errors.setdefault(i, outcome)
                break
        if not ok:
            continue
        if candidate.taints and not all(
            tolerated(t, alternative.tolerations) for t in candidate.taints
        ):
            tally.tainted += 1
            continue
        if (alternative.capacity or candidate.shared) and share(
            alternative.capacity, candidate.capacities
        ) is None:
            tally.capacity_short += 1
            continue
        tally.candidates.append(candidate)
    return tally


def group(candidates: Iterable[Candidate], symmetry: bool, order: dict[Any, int]) -> list[Group]:
    """Candidates grouped by signature (each alone without symmetry reduction), in order of
    preference: ``order``, then the order of the first member (pool, slice, device)."""
    groups: dict[Any, Group] = {}
    for candidate in candidates:
        key = candidate.signature if symmetry else candidate.id
        found = groups.get(key)
        if found is None:
            groups[key] = Group([candidate], order.setdefault(key, len(order)))
        else:
            found.members.append(candidate)
    out = list(groups.values())
    out.sort(key=lambda g: g.first.order)  # stable: pool and device order within an order
    return out

"""What an allocator's planner computes that outlives one review: candidates, selector
results, each node's filtered, grouped and free candidates, CEL constraint results, and
what the greedy path chose on each node per claims shape (``greedy``).

None of it depends on what is held (allocations and reservations change with every bind;
the search checks them when it picks), only on the devices, their pools and the classes;
free candidates and the greedy path's choices are kept with the pool states they were read
from and used again only while those stand (``planning.stands``).
So one ``SharedCaches`` serves every allocator made over the same devices and classes:
``SharedCaches.for_inputs`` keeps it while every pool's gathered slices and devices are the
same objects and the classes are the same versions, and starts empty otherwise. A review
then builds candidates, evaluates selectors and groups devices only for what changed.

    shared = SharedCaches.for_inputs(previous, pools, classes)
    allocator = Allocator(pools, classes, reserved=held)
    shared.attach(allocator)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..pools import GatheredPool, Pools
from ..toolkit import JSON
from .candidates import Candidate, Group, SelectorCache, Tally
from .engine import Allocator
from .greedy import Answered
from .planning import Free

MAX_NODE_ENTRIES = 200_000
"""Per-node entries (filtered, grouped and free candidates per request kind, the greedy
path's answers per claims shape) and shapes kept before starting afresh."""


def _class_versions(classes: Mapping[str, JSON]) -> tuple[tuple[str, str, str], ...]:
    out = []
    for name, obj in classes.items():
        meta = obj.get("metadata") or {}
        out.append((name, str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")))
    return tuple(sorted(out))


class SharedCaches:
    def __init__(self, gathered: tuple[GatheredPool, ...], classes: tuple[Any, ...]) -> None:
        self.gathered = gathered
        """Every pool's gathered facts, by identity: a new object is a change."""
        self.classes = classes
        self.selectors = SelectorCache(True)
        self.memo: dict[tuple[str, tuple[int, ...]], bool | str] = {}
        self.refuted: dict[tuple[str, tuple[int, ...], int], bool] = {}
        self.signatures: dict[Any, int] = {}
        self.candidates: dict[int, Candidate] = {}
        self.filtered: dict[tuple[str, tuple[Any, ...]], Tally] = {}
        self.grouped: dict[tuple[str, tuple[Any, ...]], list[Group]] = {}
        self.free: dict[tuple[str, tuple[Any, ...]], Free] = {}
        self.answered: dict[int, dict[str, Answered]] = {}
        self.shapes: dict[tuple[Any, ...], int] = {}
        self.devices_token: object = None

    @classmethod
    def for_inputs(
        cls, previous: SharedCaches | None, pools: Pools, classes: Mapping[str, JSON]
    ) -> SharedCaches:
        """``previous`` if it was made over the same devices and classes, else a new one."""
        versions = _class_versions(classes)
        if (
            previous is not None
            and previous.classes == versions
            and len(previous.filtered)
            + len(previous.grouped)
            + len(previous.free)
            + sum(len(by_node) for by_node in previous.answered.values())
            + len(previous.shapes)
            < MAX_NODE_ENTRIES
        ):
            if previous.devices_token is pools.devices_token:
                return previous  # a snapshot updated from the last one: the same devices
            gathered = tuple(state.gathered for state in pools.states.values())
            if len(previous.gathered) == len(gathered) and all(
                a is b for a, b in zip(previous.gathered, gathered, strict=True)
            ):
                previous.devices_token = pools.devices_token
                return previous
        made = cls(tuple(state.gathered for state in pools.states.values()), versions)
        made.devices_token = pools.devices_token
        return made

    def attach(self, allocator: Allocator) -> None:
        """Make ``allocator``'s planner read and fill these caches (it must have its caches
        on)."""
        if not allocator.caches:
            return
        planner = allocator.planner
        planner.selectors = self.selectors
        planner.memo = self.memo
        planner.refuted = self.refuted
        planner.signatures = self.signatures
        planner.candidates = self.candidates
        planner.filtered = self.filtered
        planner.grouped = self.grouped
        planner.free_entries = self.free
        allocator.greedy.answered = self.answered
        allocator.greedy.shapes = self.shapes

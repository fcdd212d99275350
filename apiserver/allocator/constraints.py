"""Claim constraints as small objects the search adds devices to and removes them from.

Every constraint has the same tiny interface: ``add`` (may the device join? if so it is
recorded), ``remove`` (undo exactly one successful ``add``) and ``complete`` (called when a
request's devices are all chosen: may the search go on?). No state is ever copied.

* ``MatchAttribute``: every device has the attribute, and the devices' values have a
  common element: a scalar is a set of one value, a list attribute (upstream's
  ``DRAListTypeAttributes``) the set of its elements, of the scalar's type (so for scalars
  this is "the same type and value");
* ``DistinctAttribute``: every device has the attribute, and no value is shared by two
  devices (the sets are pairwise disjoint; for scalars: "a value no other has").

Both count, per (type, value) element, how many of the recorded devices have it, so
``remove`` undoes any ``add`` exactly, in any order. Upstream's list-aware allocator keeps
a running intersection that ``remove`` does not widen again until the set is empty, and
records distinct values by request name; counting gives the answers of the rule itself.
* ``CelConstraint`` (KEP-5254): records the devices and evaluates the expression once the
  last request it covers is complete — never a plain evaluation on a partial set, since
  such expressions are not monotonic. When it covers one request of a fixed count, each
  partial set is checked by three-valued evaluation (``partial``): a set no completion can
  satisfy is rejected at once, which prunes the search without losing any answer. The result depends only on the multiset of device values, never on their
  order, so it is memoized by the sorted signatures of the devices (see ``candidates``).
  A runtime error or a cut-off evaluation counts as false, with the message kept for the
  explanation.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..cel import CELError, Program, evaluate
from .candidates import Group
from .partial import refutes

FUTILE_CHECKS = 32
"""Partial-set checks at one number of missing devices that never refuted: stop there."""


class Constraint(Protocol):
    label: str
    rejections: int

    def add(self, group: Group, candidate: Any) -> bool: ...

    def remove(self, group: Group, candidate: Any) -> None: ...

    def complete(self, request: int) -> bool: ...


class MatchAttribute:
    def __init__(self, label: str, attribute: str) -> None:
        self.label = label
        self.attribute = attribute
        self.rejections = 0
        self._holders: dict[Any, int] = {}
        """Per (type, value): how many recorded devices have it."""
        self._count = 0

    def add(self, group: Group, candidate: Any) -> bool:
        values = candidate.attribute(self.attribute)
        holders = self._holders
        if values is None:
            self.rejections += 1
            return False
        if self._count:  # loops, not any(): this runs on every step that tries a device
            for value in values:
                if holders.get(value) == self._count:
                    break
            else:
                self.rejections += 1
                return False
        for value in values:
            holders[value] = holders.get(value, 0) + 1
        self._count += 1
        return True

    def remove(self, group: Group, candidate: Any) -> None:
        for value in candidate.attribute(self.attribute):
            left = self._holders[value] - 1
            if left:
                self._holders[value] = left
            else:
                del self._holders[value]
        self._count -= 1

    def complete(self, request: int) -> bool:
        return True


class DistinctAttribute:
    def __init__(self, label: str, attribute: str) -> None:
        self.label = label
        self.attribute = attribute
        self.rejections = 0
        self._seen: set[Any] = set()
        """Every (type, value) of the recorded devices: they are pairwise disjoint."""

    def add(self, group: Group, candidate: Any) -> bool:
        values = candidate.attribute(self.attribute)
        if values is None or not self._seen.isdisjoint(values):
            self.rejections += 1
            return False
        self._seen.update(values)
        return True

    def remove(self, group: Group, candidate: Any) -> None:
        self._seen.difference_update(candidate.attribute(self.attribute))

    def complete(self, request: int) -> bool:
        return True


class Evaluations:
    """Counts the CEL constraint evaluations of one search (what the budget limits) and the
    partial-set checks, with an optional memo shared across searches of one engine."""

    def __init__(
        self,
        memo: dict[tuple[str, tuple[int, ...]], bool | str] | None,
        refuted: dict[tuple[str, tuple[int, ...], int], bool] | None = None,
    ) -> None:
        self.memo = memo
        self.refuted = refuted
        self.count = 0
        self.partial = 0


class CelConstraint:
    def __init__(
        self, label: str, program: Program, last_request: int, evaluations: Evaluations
    ) -> None:
        self.label = label
        self.program = program
        self.last_request = last_request
        self.evaluations = evaluations
        self.rejections = 0
        self.error: str | None = None
        self.total: int | None = None
        """How many devices the complete set will have, when the search knows it (the
        constraint covers one request of a fixed count): then partial sets are checked."""
        self._groups: list[int] = []
        self._values: list[Any] = []
        self._checks: dict[int, tuple[int, int]] = {}
        """Per number of missing devices: partial checks made, and how many refuted."""

    def add(self, group: Group, candidate: Any) -> bool:
        value = candidate.value()
        if isinstance(value, CELError):
            self.rejections += 1
            self.error = str(value)
            return False
        self._groups.append(group.index)
        self._values.append(value)
        if self.total is not None and len(self._values) < self.total and self._refuted():
            self._groups.pop()
            self._values.pop()
            self.rejections += 1
            return False
        return True

    def _refuted(self) -> bool:
        """Whether no completion of the devices chosen so far can satisfy the expression.

        Checks that never refute at some number of missing devices (``sum(...) == 52``
        decides nothing before the set is complete) stop after ``FUTILE_CHECKS``: they are
        only a shortcut, so skipping them loses nothing."""
        missing = (self.total or 0) - len(self._values)
        tried, refuted = self._checks.get(missing, (0, 0))
        if tried >= FUTILE_CHECKS and not refuted:
            return False
        memo = self.evaluations.refuted
        key = (self.program.expression, tuple(sorted(self._groups)), missing)
        if memo is not None:
            found = memo.get(key)
            if found is not None:
                return found
        self.evaluations.partial += 1
        result = refutes(self.program.expression, self._values, missing)
        self._checks[missing] = (tried + 1, refuted + result)
        if memo is not None:
            memo[key] = result
        return result

    def remove(self, group: Group, candidate: Any) -> None:
        # The search undoes in reverse order, so the device is the last one recorded.
        self._groups.pop()
        self._values.pop()

    def complete(self, request: int) -> bool:
        if request != self.last_request:
            return True
        memo = self.evaluations.memo
        key = (self.program.expression, tuple(sorted(self._groups)))
        if memo is not None:
            found = memo.get(key)
            if found is not None:
                return self._verdict(found)
        self.evaluations.count += 1
        result: bool | str
        try:
            result = evaluate(self.program, list(self._values))
        except CELError as err:
            result = str(err)
        if memo is not None:
            memo[key] = result
        return self._verdict(result)

    def _verdict(self, result: bool | str) -> bool:
        if result is True:
            return True
        self.rejections += 1
        if isinstance(result, str):
            self.error = result
        return False

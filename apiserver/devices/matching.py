"""Does a patch's filter select a device? True, False, or a selector that failed for it.

All criteria must hold, cheapest first: driver, pool and device names, then the selectors
of the DeviceClass the patch names (their results are cached per device and class
version), then the patch's own CEL selectors in order. The first selector that is false
decides; one that fails to evaluate (missing attribute, wrong type, a device whose values
CEL cannot represent) makes the outcome a ``SelectorFailure``: the patch skips the device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..cel import DeviceValue, EvaluationError, Program, device_value, evaluate
from ..toolkit import JSON
from .patches import CompiledClass, CompiledPatch


@dataclass(frozen=True)
class SelectorFailure:
    selector: str
    message: str


Outcome = bool | SelectorFailure


class Candidate:
    """A device as matching sees it: names, the CEL value (converted once, on first use),
    and the cached results of class selectors."""

    __slots__ = ("_value", "class_results", "driver", "name", "pool", "raw")

    def __init__(self, driver: str, pool: str, raw: JSON) -> None:
        self.driver = driver
        self.pool = pool
        self.raw = raw
        self.name = str(raw.get("name", ""))
        self._value: DeviceValue | EvaluationError | None = None
        self.class_results: dict[str, tuple[int, Outcome]] = {}

    def value(self) -> DeviceValue | EvaluationError:
        if self._value is None:
            try:
                self._value = device_value(self.driver, self.raw)
            except EvaluationError as err:
                self._value = err
        return self._value


def selectors_outcome(programs: tuple[tuple[str, Program], ...], candidate: Candidate) -> Outcome:
    if not programs:
        return True
    value = candidate.value()
    if isinstance(value, EvaluationError):
        return SelectorFailure(programs[0][0], str(value))
    for selector, program in programs:
        try:
            if not evaluate(program, value):
                return False
        except EvaluationError as err:
            return SelectorFailure(selector, str(err))
    return True


ClassLookup = Callable[[str], tuple[CompiledClass, int] | None]
"""A DeviceClass by name, with the version of its compiled form."""


def class_outcome(cls: CompiledClass, version: int, candidate: Candidate) -> Outcome:
    cached = candidate.class_results.get(cls.name)
    if cached is not None and cached[0] == version:
        return cached[1]
    outcome: Outcome = False if cls.problem else selectors_outcome(cls.programs, candidate)
    candidate.class_results[cls.name] = (version, outcome)
    return outcome


def patch_outcome(patch: CompiledPatch, candidate: Candidate, classes: ClassLookup) -> Outcome:
    if not patch.sets_something:
        return False
    if patch.driver is not None and patch.driver != candidate.driver:
        return False
    if patch.pool is not None and patch.pool != candidate.pool:
        return False
    if patch.device is not None and patch.device != candidate.name:
        return False
    if patch.problem is not None:
        return False
    if patch.class_name is not None:
        found = classes(patch.class_name)
        if found is None:
            return False
        outcome = class_outcome(found[0], found[1], candidate)
        if outcome is not True:
            return outcome
    return selectors_outcome(patch.programs, candidate)


def describe(candidate: Candidate) -> str:
    return f"{candidate.driver}/{candidate.pool}/{candidate.name}"

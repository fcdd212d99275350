"""Rounds of one measurement: median and spread."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass
class RoundResult:
    """One timed round: how many operations completed, how long it took, latency percentiles."""

    ops: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int = 0

    @property
    def rate(self) -> float:
        return self.ops / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Series:
    """The rounds of one benchmark against one target."""

    label: str
    rounds: list[RoundResult] = field(default_factory=list)

    def add(self, result: RoundResult) -> None:
        self.rounds.append(result)

    @property
    def rate(self) -> Figure:
        return Figure([r.rate for r in self.rounds])

    @property
    def p50(self) -> Figure:
        return Figure([r.p50_ms for r in self.rounds])

    @property
    def p99(self) -> Figure:
        return Figure([r.p99_ms for r in self.rounds])


@dataclass(frozen=True)
class Figure:
    """Values of one figure over the rounds."""

    values: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else 0.0

    @property
    def spread(self) -> float:
        """Half the range over the median: ``0.05`` means the rounds lie within about ±5%."""
        if not self.values or self.median == 0:
            return 0.0
        return (max(self.values) - min(self.values)) / 2 / self.median


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of already sorted values, nearest rank."""
    if not sorted_values:
        return 0.0
    rank = max(0, min(len(sorted_values) - 1, round(q / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[rank]

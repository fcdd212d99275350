"""``set_young_threshold`` sets the young generation's threshold for the process, keeps the
older generations' own, and refuses a threshold that would never (or always) collect."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from apiserver.toolkit.collector import set_young_threshold


@pytest.fixture(autouse=True)
def thresholds_restored() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_sets_the_young_generations_threshold_and_keeps_the_others() -> None:
    gc.set_threshold(700, 11, 12)
    set_young_threshold(20_000)
    assert gc.get_threshold() == (20_000, 11, 12)


@pytest.mark.parametrize("allocations", [0, -5])
def test_refuses_a_threshold_below_one(allocations: int) -> None:
    gc.set_threshold(700, 10, 10)
    with pytest.raises(ValueError, match="more than 0"):
        set_young_threshold(allocations)
    assert gc.get_threshold() == (700, 10, 10)

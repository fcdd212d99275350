"""Consumable capacity rules (``api.resource.capacity``), table-style with upstream's cases.

The rows of ``consumed`` and ``violates`` are those of kubernetes/dynamic-resource-allocation
``structured/internal/incubating/consumable_capacity_test.go`` (``testCalculateConsumedCapacity``
and ``testViolateCapacityRequestPolicy``), plus the rounding of requests between steps.
"""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.resource import Capacity, device_capacities, quantity_text, requested, share
from apiserver.api.resource.capacity import Policy, consumed, violates
from apiserver.cel.quantity import parse


def q(text: str) -> int:
    return parse(text).nanos


ONE, TWO, THREE = q("1"), q("2"), q("3")


def ranged(default: int, low: int, high: int | None = None, step: int | None = None) -> Policy:
    return Policy(default=default, ranged=True, min=low, max=high, step=step)


def values(default: int, *options: int) -> Policy:
    return Policy(default=default, valid_values=options)


# name: (requested or None, capacity value, policy, expected consumption)
CONSUMED: dict[str, tuple[int | None, int, Policy | None, int]] = {
    "empty": (None, ONE, Policy(), ONE),
    "min in range": (None, TWO, ranged(ONE, ONE), ONE),
    "default in set": (None, TWO, values(ONE, ONE), ONE),
    "more than min in range": (TWO, TWO, ranged(ONE, ONE), TWO),
    "less than min in range": (ONE, TWO, ranged(ONE, TWO), TWO),
    "with step (round up)": (TWO, THREE, ranged(ONE, ONE, step=TWO), THREE),
    "with step (no remaining)": (TWO, TWO, ranged(ONE, ONE, step=ONE), TWO),
    "valid value in set": (TWO, THREE, values(ONE, ONE, TWO, THREE), TWO),
    "set (round up)": (TWO, THREE, values(ONE, ONE, THREE), THREE),
    "larger than set": (THREE, THREE, values(ONE, ONE, TWO), THREE),
    # beyond upstream's table: no policy, no request, fractions and whole-unit steps
    "no policy, not requested: the whole value": (None, q("10Gi"), None, q("10Gi")),
    "no policy, requested: as requested": (q("1500m"), THREE, None, q("1500m")),
    "step in whole units: 1.5 rounds to 2 first": (
        q("1500m"),
        q("10"),
        ranged(q("1"), q("1"), step=q("1")),
        q("2"),
    ),
    "step of 1Gi from 1Gi: 2.5Gi takes 3Gi": (
        q("2560Mi"),
        q("10Gi"),
        ranged(q("1Gi"), q("1Gi"), step=q("1Gi")),
        q("3Gi"),
    ),
}


@pytest.mark.parametrize("case", CONSUMED, ids=list(CONSUMED))
def test_consumed(case: str) -> None:
    amount, value, policy, expected = CONSUMED[case]
    assert consumed(amount, Capacity(value, policy)) == expected


# name: (amount after rounding, policy, violates)
VIOLATES: dict[str, tuple[int, Policy | None, bool]] = {
    "no constraint": (ONE, None, False),
    "less than maximum": (ONE, ranged(ONE, ONE, TWO), False),
    "more than maximum": (TWO, ranged(ONE, ONE, ONE), True),
    "in set": (ONE, values(ONE, ONE), False),
    "not in set": (TWO, values(ONE, ONE), True),
    "off step": (q("4"), ranged(ONE, ONE, step=q("2")), True),
    "on step": (q("5"), ranged(ONE, ONE, step=q("2")), False),
    "the default is always allowed": (q("4"), Policy(default=q("4"), ranged=True, max=ONE), False),
}


@pytest.mark.parametrize("case", VIOLATES, ids=list(VIOLATES))
def test_violates(case: str) -> None:
    amount, policy, expected = VIOLATES[case]
    assert violates(amount, policy) is expected


def test_a_request_for_a_capacity_the_device_lacks_never_fits() -> None:
    capacities = {"bandwidth": Capacity(q("10Gi"))}
    assert share((("memory", q("1")),), capacities) is None
    assert share((), {}) == {}


def test_a_share_takes_every_capacity_of_the_device() -> None:
    """Upstream's get-consumed-capacity-from-request: requested -> as rounded; unrequested
    with a default -> the default; unrequested without policy -> the whole value."""
    capacities = {
        "capacity-0": Capacity(TWO, ranged(TWO, ONE)),
        "capacity-1": Capacity(TWO, ranged(ONE, ONE)),
        "dummy": Capacity(ONE),
    }
    taken = share((("capacity-0", ONE),), capacities)
    assert taken == {"capacity-0": ONE, "capacity-1": ONE, "dummy": ONE}


def test_what_others_consume_counts_against_the_value() -> None:
    capacities = {"bandwidth": Capacity(q("10Gi"), ranged(q("1Gi"), q("1Gi"), step=q("1Gi")))}
    asked = (("bandwidth", q("4Gi")),)
    assert share(asked, capacities, {"bandwidth": q("6Gi")}) == {"bandwidth": q("4Gi")}
    assert share(asked, capacities, {"bandwidth": q("7Gi")}) is None
    # an amount beyond the value fails even on an unshared device
    assert share((("bandwidth", q("11Gi")),), capacities) is None


def test_a_dedicated_device_serves_a_request_up_to_its_value() -> None:
    """The issue's example: 1Ti of memory is not on an 80Gi GPU; 80Gi is."""
    capacities = {"memory": Capacity(q("80Gi"))}
    assert share((("memory", q("1Ti")),), capacities) is None
    assert share((("memory", q("80Gi")),), capacities) == {"memory": q("80Gi")}


def test_a_policy_that_forbids_the_rounded_amount_rejects_the_device() -> None:
    """``with-request-over-max-sharing-policy``: more than max is not rounded down."""
    capacities = {"memory": Capacity(q("8Gi"), ranged(q("1Gi"), q("1Gi"), high=q("2Gi")))}
    assert share((("memory", q("3Gi")),), capacities) is None
    assert share((("memory", q("2Gi")),), capacities) == {"memory": q("2Gi")}


def test_parsing_from_json() -> None:
    device: dict[str, Any] = {
        "capacity": {
            "bandwidth": {
                "value": "10Gi",
                "requestPolicy": {
                    "default": "1Gi",
                    "validRange": {"min": "1Gi", "max": "8Gi", "step": "1Gi"},
                },
            },
            "queues": {"value": 8, "requestPolicy": {"default": "1", "validValues": ["1", "2"]}},
            "broken": {"value": "ten"},
        }
    }
    found = device_capacities(device)
    assert found == {
        "bandwidth": Capacity(q("10Gi"), Policy(q("1Gi"), (), True, q("1Gi"), q("8Gi"), q("1Gi"))),
        "queues": Capacity(q("8"), Policy(q("1"), (q("1"), q("2")))),
    }
    assert requested({"requests": {"b": "2Gi", "a": "1"}}) == (("a", q("1")), ("b", q("2Gi")))
    assert requested(None) == ()


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        ("0", "0"),
        ("1024", "1Ki"),
        ("1536", "1536"),
        ("3Gi", "3Gi"),
        ("16G", "16G"),
        ("2000", "2k"),
        ("500m", "0.5"),
    ],
)
def test_quantity_text_round_trips(amount: str, text: str) -> None:
    assert quantity_text(q(amount)) == text
    assert q(text) == q(amount)

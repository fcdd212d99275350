"""Estimated cost at compile time, and the run-time cut-off."""

from __future__ import annotations

import pytest

from apiserver import cel
from bench.celbench import CONTIGUOUS, GRID


def nested_all(depth: int) -> str:
    names = [f"d{i}" for i in range(depth)]
    body = " && ".join(f"{n}.attributes['mla.example.com'].index >= 0" for n in names)
    for n in reversed(names):
        body = f"devices.all({n}, {body})"
    return body


def devices(count: int) -> list[cel.DeviceValue]:
    return [
        cel.device_value("mla.example.com", {"name": f"d{i}", "attributes": {"index": {"int": i}}})
        for i in range(count)
    ]


def test_simple_selectors_are_cheap() -> None:
    assert cel.compile_selector('device.driver == "gpu.example.com"').estimated_cost < 20
    program = cel.compile_selector(
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("10Gi")) >= 0'
    )
    assert program.estimated_cost < 50


@pytest.mark.parametrize("expression", [CONTIGUOUS, GRID], ids=["contiguous", "grid"])
def test_kep_constraints_are_within_the_limit(expression: str) -> None:
    assert cel.compile_constraint(expression).estimated_cost <= cel.MAX_COST


def test_cost_grows_with_comprehension_nesting() -> None:
    costs = [
        cel.compile_constraint(nested_all(d), cost_limit=None).estimated_cost for d in (1, 2, 3)
    ]
    assert costs[0] < costs[1] < costs[2]
    assert costs[2] > 32 * costs[1] / 2  # each level iterates up to 32 devices


def test_deeply_nested_comprehensions_are_rejected_at_create_time() -> None:
    with pytest.raises(cel.CostLimitError) as info:
        cel.compile_constraint(nested_all(5))
    assert info.value.estimated > cel.MAX_COST
    assert info.value.limit == cel.MAX_COST
    assert "too complex, exceeds cost limit" in str(info.value)


def test_attribute_map_iteration_is_bounded_by_the_size_hints() -> None:
    # 32 domains x 32 attributes x 32 domains x 32 attributes: a million iterations
    nested = (
        "device.attributes.all(a, device.attributes[a].all(b, "
        "device.attributes.all(c, device.attributes[c].all(d, b != d))))"
    )
    with pytest.raises(cel.CostLimitError):
        cel.compile_selector(nested)
    assert cel.compile_selector("device.attributes.all(a, device.attributes[a].all(b, b != ''))")


def test_unbounded_ranges_are_rejected() -> None:
    with pytest.raises(cel.CostLimitError):
        cel.compile_selector('lists.range(device.attributes["gpu.example.com"].n).all(i, i >= 0)')
    assert cel.compile_selector("lists.range(10).all(i, i >= 0)").estimated_cost < 1000


def test_string_growth_is_estimated() -> None:
    double = 'cel.bind(a, device.driver + device.driver, cel.bind(b, a + a, cel.bind(c, b + b, c + c == "")))'
    single = 'cel.bind(a, device.driver + device.driver, a == "")'
    assert cel.compile_selector(double).estimated_cost > cel.compile_selector(single).estimated_cost


def test_stored_expressions_can_skip_the_limit() -> None:
    program = cel.compile_constraint(nested_all(5), cost_limit=None)
    assert program.estimated_cost > cel.MAX_COST
    with pytest.raises(cel.CostLimitError):
        cel.compile_constraint(nested_all(5))


def test_runaway_evaluation_is_cut_off_at_run_time() -> None:
    # accepted at create (estimated below the limit) but 32^3 iterations at run time
    program = cel.compile_constraint(nested_all(3))
    assert program.estimated_cost <= cel.MAX_COST
    with pytest.raises(cel.RuntimeLimitError, match="actual cost limit exceeded"):
        cel.evaluate(program, devices(32))
    assert cel.evaluate(program, devices(8)) is True  # 8^3 iterations are within the budget


def test_iteration_budget_is_per_evaluation() -> None:
    program = cel.compile_constraint(nested_all(2))
    for _ in range(50):  # 50 x 32 x 32 iterations in total, each evaluation within the budget
        assert cel.evaluate(program, devices(32)) is True

"""Three-valued checks of partial device sets against KEP-5254 constraints: what they
refute, and that they never refute a set some completion satisfies."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from apiserver.allocator.partial import refutes
from apiserver.cel import compile_constraint, device_value, evaluate
from apiserver.cel.errors import CELError

D = "mla.example.com"
RING = (
    f"size(devices) == 4 && devices.map(d, d.attributes['{D}'].id).max()"
    f" - devices.map(d, d.attributes['{D}'].id).min() == 3"
)
GRID = (
    "size(devices) == 4 && devices.all(d, devices.filter(other, d != other && "
    f"((d.attributes['{D}'].row == other.attributes['{D}'].row && "
    f"(d.attributes['{D}'].col == other.attributes['{D}'].col + 1 || "
    f"d.attributes['{D}'].col == other.attributes['{D}'].col - 1)) || "
    f"(d.attributes['{D}'].col == other.attributes['{D}'].col && "
    f"(d.attributes['{D}'].row == other.attributes['{D}'].row + 1 || "
    f"d.attributes['{D}'].row == other.attributes['{D}'].row - 1)))).size() >= 2)"
)
EXPRESSIONS = [
    RING,
    GRID,
    f"devices.all(d, d.attributes['{D}'].id % 2 == devices[0].attributes['{D}'].id % 2)",
    f"devices.map(d, d.attributes['{D}'].id).sum() == 10",
    f"devices.exists(d, d.attributes['{D}'].id == 3) && size(devices) > 2",
    f"devices.filter(d, d.attributes['{D}'].id > 4).size() <= 1",
    f"!devices.exists(d, d.attributes['{D}'].id == 7)",
    f"devices.all(d, d.attributes['{D}'].id < 6) || devices.all(d, d.attributes['{D}'].id >= 3)",
    f"cel.bind(ids, devices.map(d, d.attributes['{D}'].id), ids.max() - ids.min() <= 2)",
]


def ids(*values: int) -> list[dict[str, object]]:
    return [device_value(D, {"name": f"d{v}", "attributes": {"id": {"int": v}}}) for v in values]


def cells(*positions: tuple[int, int]) -> list[dict[str, object]]:
    return [
        device_value(D, {"name": "x", "attributes": {"row": {"int": r}, "col": {"int": c}}})
        for r, c in positions
    ]


def test_the_ring_refutes_devices_too_far_apart() -> None:
    assert refutes(RING, ids(0, 5), 2)
    assert not refutes(RING, ids(0, 3), 2)
    assert not refutes(RING, ids(0), 3)


def test_the_grid_refutes_a_device_that_can_no_longer_get_two_neighbours() -> None:
    assert refutes(GRID, cells((0, 0), (0, 2), (2, 2)), 1)
    assert not refutes(GRID, cells((0, 0), (0, 1), (1, 1)), 1)
    assert not refutes(GRID, cells((0, 0), (5, 5)), 2)


def test_nothing_unknown_is_assumed() -> None:
    assert not refutes(f"devices.map(d, d.attributes['{D}'].id).sum() == 52", ids(0, 1), 4)
    assert not refutes("devices.all(d, d.driver.startsWith('x'))", ids(0), 1)
    assert not refutes("this is not CEL", ids(0), 1)


def _satisfied(expression: str, devices: list[dict[str, object]]) -> bool:
    try:
        return evaluate(compile_constraint(expression, cost_limit=None), devices)
    except CELError:
        return False


@settings(max_examples=400, deadline=None)
@given(
    expression=st.sampled_from(EXPRESSIONS),
    pool=st.lists(st.integers(0, 8), min_size=3, max_size=7, unique=True),
    data=st.data(),
)
def test_a_refuted_set_has_no_satisfying_completion(
    expression: str, pool: list[int], data: st.DataObject
) -> None:
    total = data.draw(st.integers(2, min(4, len(pool))))
    chosen = data.draw(st.integers(1, total - 1))
    picked, rest = pool[:chosen], pool[chosen:]
    if expression == GRID:
        as_cells = {v: (v // 3, v % 3) for v in pool}
        value = cells(*(as_cells[v] for v in picked))
        completions = [
            cells(*(as_cells[v] for v in picked + list(c)))
            for c in itertools.combinations(rest, total - chosen)
        ]
    else:
        value = ids(*picked)
        completions = [ids(*picked, *c) for c in itertools.combinations(rest, total - chosen)]
    if refutes(expression, value, total - chosen):
        assert not any(_satisfied(expression, c) for c in completions)

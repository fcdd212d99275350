"""List-type attributes in CEL (upstream's ``DRAListTypeAttributes``), table-driven.

As upstream exposes them: a list attribute is a CEL list of its elements (versions as
semver values), usable with ``in``, ``size``, the list macros and the ``includes`` member
function, which is membership for a list (of at most 48 values) and equality for a scalar.
Cases follow upstream's ``cel/compile_test.go`` ``includes-*`` and list-attribute cases.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from apiserver import cel
from apiserver.api.resource.validation.device import MAX_ATTRIBUTE_VALUES_PER_DEVICE

DRIVER = "nic.example.com"

NIC = {
    "name": "nic-0",
    "attributes": {
        "pcieRoots": {"strings": ["pci0000:00", "pci0000:80"]},
        "numaNodes": {"ints": [0, 1]},
        "offloads": {"bools": [True]},
        "firmware": {"versions": ["1.2.0", "2.0.0-rc.1"]},
        "model": {"string": "cx7"},
        "ports": {"int": 2},
        "example.com/zones": {"strings": ["a"]},
        "long": {"ints": list(range(MAX_ATTRIBUTE_VALUES_PER_DEVICE + 1))},
    },
}


@dataclass(frozen=True)
class Err:
    text: str


A = f'device.attributes["{DRIVER}"]'

CASES: list[tuple[str, bool | Err]] = [
    # Lists are CEL lists.
    (f'"pci0000:80" in {A}.pcieRoots', True),
    (f'"pci0000:40" in {A}.pcieRoots', False),
    (f"size({A}.numaNodes) == 2", True),
    (f"{A}.numaNodes.all(n, n < 2)", True),
    (f"{A}.numaNodes.exists(n, n == 3)", False),
    (f"{A}.offloads[0]", True),
    (f'{A}.firmware.exists(v, v.isGreaterThan(semver("2.0.0-alpha")))', True),
    (f'{A}.firmware[0] == semver("1.2.0")', True),
    ('"a" in device.attributes["example.com"].zones', True),
    # includes: membership on a list ...
    (f'{A}.pcieRoots.includes("pci0000:00")', True),
    (f'{A}.pcieRoots.includes("pci0000:40")', False),
    (f"{A}.numaNodes.includes(1)", True),
    (f"{A}.numaNodes.includes(7)", False),
    (f"{A}.offloads.includes(true)", True),
    (f"{A}.offloads.includes(false)", False),
    (f'{A}.firmware.includes(semver("2.0.0-rc.1"))', True),
    # ... of the same type only,
    (f'{A}.numaNodes.includes("1")', False),
    # ... equality on a scalar,
    (f'{A}.model.includes("cx7")', True),
    (f'{A}.model.includes("cx6")', False),
    (f"{A}.ports.includes(2)", True),
    # ... and an error beyond 48 values, as upstream bounds its cost.
    (f"{A}.long.includes(1)", Err("cannot be applied to lists longer than 48 values")),
]


@pytest.mark.parametrize(("expression", "expected"), CASES)
def test_list_attributes_in_selectors(expression: str, expected: bool | Err) -> None:
    program = cel.compile_selector(expression)
    device = cel.device_value(DRIVER, NIC)
    if isinstance(expected, Err):
        with pytest.raises(cel.EvaluationError, match=expected.text):
            cel.evaluate(program, device)
    else:
        assert cel.evaluate(program, device) is expected


def test_includes_in_a_constraint_over_devices() -> None:
    other = {"name": "nic-1", "attributes": {"pcieRoots": {"strings": ["pci0000:80"]}}}
    devices = [cel.device_value(DRIVER, NIC), cel.device_value(DRIVER, other)]
    program = cel.compile_constraint(
        f'devices.all(d, d.attributes["{DRIVER}"].pcieRoots.includes("pci0000:80"))'
    )
    assert cel.evaluate(program, devices) is True
    program = cel.compile_constraint(
        f'devices.all(d, d.attributes["{DRIVER}"].pcieRoots.includes("pci0000:00"))'
    )
    assert cel.evaluate(program, devices) is False


def test_includes_takes_exactly_one_argument() -> None:
    with pytest.raises(cel.CompileError):
        cel.compile_selector(f"{A}.numaNodes.includes(1, 2)")

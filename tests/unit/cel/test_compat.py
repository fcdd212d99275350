"""Compatibility of the CEL layer with Kubernetes DRA CEL, table-driven.

Cases are written from the Kubernetes documentation of DRA selectors and of the CEL libraries
Kubernetes enables (quantity, semver, lists, strings, sets, optional types, bindings), and
from the two KEP-5254 example constraints.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from apiserver import cel

DRIVER = "gpu.example.com"

GPU = {
    "name": "gpu-0",
    "attributes": {
        "model": {"string": "a100"},
        "index": {"int": 3},
        "healthy": {"bool": True},
        "driverVersion": {"version": "1.2.3-rc.1"},
        "firmware": {"version": "2.0.0+build.7"},
        "example.com/region": {"string": "eu-1"},
        "dra.net/numaNode": {"int": 1},
    },
    "capacity": {
        "memory": {"value": "40Gi"},
        "cores": {"value": 128},
        "example.com/bandwidth": {"value": "1.5G"},
    },
}


@dataclass(frozen=True)
class Err:
    """An evaluation error whose message contains ``text``."""

    text: str


def gpu() -> cel.DeviceValue:
    return cel.device_value(DRIVER, GPU)


SELECTORS: list[tuple[str, str, bool | Err]] = [
    # driver and attribute look-ups by domain
    ("driver", 'device.driver == "gpu.example.com"', True),
    ("driver-other", 'device.driver == "other.example.com"', False),
    ("bare-name-in-driver-domain", 'device.attributes["gpu.example.com"].model == "a100"', True),
    ("qualified-name", 'device.attributes["example.com"].region == "eu-1"', True),
    ("qualified-int", 'device.attributes["dra.net"].numaNode == 1', True),
    ("bare-name-not-in-other-domain", '"model" in device.attributes["example.com"]', False),
    ("unknown-domain-is-empty", 'size(device.attributes["unknown.io"]) == 0', True),
    ("unknown-domain-has", 'has(device.attributes["unknown.io"].model)', False),
    ("unknown-domain-capacity", 'size(device.capacity["unknown.io"]) == 0', True),
    ("domain-from-driver", "device.attributes[device.driver].index == 3", True),
    ("has-present", 'has(device.attributes["gpu.example.com"].model)', True),
    ("has-absent", 'has(device.attributes["gpu.example.com"].serial)', False),
    (
        "missing-attribute-is-error",
        'device.attributes["gpu.example.com"].serial == "x"',
        Err("no such key: serial"),
    ),
    (
        "missing-in-unknown-domain-is-error",
        'device.attributes["unknown.io"].model == "a100"',
        Err("no such key: model"),
    ),
    (
        "missing-attribute-hint",
        'device.attributes["gpu.example.com"].serial == "x"',
        Err("optional chaining"),
    ),
    (
        "optional-chaining",
        'device.attributes["gpu.example.com"].?serial.orValue("none") == "none"',
        True,
    ),
    ("optional-index", 'device.attributes[?"unknown.io"].hasValue()', False),
    ("int", 'device.attributes["gpu.example.com"].index > 2', True),
    ("int-cross-type-double", 'device.attributes["gpu.example.com"].index > 2.5', True),
    ("bool", 'device.attributes["gpu.example.com"].healthy', True),
    ("bool-negated", '!device.attributes["gpu.example.com"].healthy', False),
    ("string-vs-int-equality-is-false", 'device.attributes["gpu.example.com"].model == 1', False),
    (
        "string-vs-int-ordering-is-error",
        'device.attributes["gpu.example.com"].model > 1',
        Err("no such overload"),
    ),
    ("allow-multiple-allocations", "device.allowMultipleAllocations == false", True),
    (
        "non-bool-result",
        'device.attributes["gpu.example.com"].model',
        Err("could not be converted to bool"),
    ),
    (
        "bind",
        'cel.bind(a, device.attributes["gpu.example.com"], a.model == "a100" && a.index == 3)',
        True,
    ),
    (
        "two-var-comprehension",
        'device.attributes["gpu.example.com"].exists(k, v, k == "index" && v == 3)',
        True,
    ),
    ("all-domains", 'device.attributes.all(d, d.endsWith(".com") || d.endsWith(".net"))', True),
    # strings extension
    ("startsWith", 'device.attributes["gpu.example.com"].model.startsWith("a1")', True),
    ("endsWith", 'device.attributes["gpu.example.com"].model.endsWith("00")', True),
    ("contains", 'device.attributes["gpu.example.com"].model.contains("10")', True),
    ("matches", 'device.attributes["gpu.example.com"].model.matches("^a[0-9]+$")', True),
    ("upperAscii", 'device.attributes["gpu.example.com"].model.upperAscii() == "A100"', True),
    ("lowerAscii", '"A100".lowerAscii() == device.attributes["gpu.example.com"].model', True),
    ("split", 'device.attributes["example.com"].region.split("-") == ["eu", "1"]', True),
    ("join", '["a", "b"].join("-") == "a-b"', True),
    ("replace", 'device.attributes["example.com"].region.replace("-", "_") == "eu_1"', True),
    ("substring", 'device.attributes["gpu.example.com"].model.substring(1) == "100"', True),
    ("charAt", 'device.attributes["gpu.example.com"].model.charAt(0) == "a"', True),
    ("indexOf", 'device.attributes["gpu.example.com"].model.indexOf("1") == 1', True),
    ("lastIndexOf", 'device.attributes["gpu.example.com"].model.lastIndexOf("0") == 3', True),
    ("trim", '"  a100 ".trim() == device.attributes["gpu.example.com"].model', True),
    ("size", 'device.attributes["gpu.example.com"].model.size() == 4', True),
    ("quote", 'strings.quote("a") == "\\"a\\""', True),
    # semver
    (
        "semver-attribute-prerelease-lower",
        'device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.2.3"))',
        True,
    ),
    (
        "semver-attribute-greater",
        'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.2"))',
        True,
    ),
    (
        "semver-compareTo",
        'device.attributes["gpu.example.com"].firmware.compareTo(semver("2.0.0")) == 0',
        True,
    ),
    # A device's pre-release version against literals: equal, and ordered by its
    # dot-separated identifiers (a pre-release key once held a byte the library cut off).
    (
        "semver-attribute-prerelease-equal",
        'device.attributes["gpu.example.com"].driverVersion == semver("1.2.3-rc.1")',
        True,
    ),
    (
        "semver-attribute-prerelease-greater",
        'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.3-rc.0"))',
        True,
    ),
    (
        "semver-attribute-prerelease-fewer-identifiers-first",
        'device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.2.3-rc.1.0"))',
        True,
    ),
    (
        "semver-attribute-prerelease-identifier-order",
        'device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.2.3-rc-1"))',
        True,
    ),
    ("semver-build-ignored", 'semver("1.0.0+a") == semver("1.0.0+b")', True),
    ("semver-equality", 'device.attributes["gpu.example.com"].firmware == semver("2.0.0")', True),
    ("semver-major", 'device.attributes["gpu.example.com"].driverVersion.major() == 1', True),
    ("semver-minor", 'semver("1.2.3").minor() == 2', True),
    ("semver-patch", 'device.attributes["gpu.example.com"].driverVersion.patch() == 3', True),
    ("semver-compare-less", 'semver("1.2.3").compareTo(semver("2.0.0")) == -1', True),
    ("semver-compare-greater", 'semver("1.2.3").compareTo(semver("0.1.2")) == 1', True),
    ("isSemver", 'isSemver("1.0.0")', True),
    ("isSemver-hello", 'isSemver("hello")', False),
    ("isSemver-v-strict", 'isSemver("v1.0")', False),
    ("isSemver-v-normalized", 'isSemver("v1.0", true)', True),
    ("isSemver-attribute", 'isSemver(device.attributes["gpu.example.com"].model)', False),
    ("isSemver-normalized-nonliteral", 'isSemver("v" + "1.2", true)', True),
    ("semver-normalize-zeros", 'semver("01.01.01", true) == semver("1.1.1")', True),
    ("semver-normalize-short", 'semver("1.0", true) == semver("1.0.0")', True),
    (
        "semver-invalid-is-error",
        'semver("1.0") == semver("1.0.0")',
        Err("invalid semantic version"),
    ),
    (
        "semver-nonliteral",
        'semver(device.attributes["gpu.example.com"].model + ".0.0", true) == semver("1.0.0")',
        Err("invalid semantic version"),
    ),
    ("semver-nonliteral-valid", 'semver("1." + "2.3").isGreaterThan(semver("1.2.0"))', True),
    # quantity
    (
        "quantity-capacity-compare",
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) == 0',
        True,
    ),
    (
        "quantity-capacity-greater",
        'device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("32Gi"))',
        True,
    ),
    (
        "quantity-capacity-less",
        'device.capacity["gpu.example.com"].memory.isLessThan(quantity("32Gi"))',
        False,
    ),
    (
        "quantity-capacity-number",
        'device.capacity["gpu.example.com"].cores == quantity("128")',
        True,
    ),
    (
        "quantity-qualified-capacity",
        'device.capacity["example.com"].bandwidth.compareTo(quantity("1500M")) == 0',
        True,
    ),
    ("quantity-equal-different-units", 'quantity("1Gi") == quantity("1024Mi")', True),
    ("quantity-compare-equal-units", 'quantity("200M").compareTo(quantity("0.2G")) == 0', True),
    ("quantity-compare-decimal-binary", 'quantity("50M").compareTo(quantity("50Mi")) == -1', True),
    ("quantity-compare-binary-decimal", 'quantity("50Mi").compareTo(quantity("50M")) == 1', True),
    ("quantity-isGreaterThan", 'quantity("150Mi").isGreaterThan(quantity("100Mi"))', True),
    ("quantity-isLessThan", 'quantity("100M").isLessThan(quantity("50M"))', False),
    ("quantity-milli", 'quantity("500m").compareTo(quantity("0.5")) == 0', True),
    ("quantity-exponent", 'quantity("1e3") == quantity("1k")', True),
    ("quantity-negative", 'quantity("-1").isLessThan(quantity("0"))', True),
    ("isQuantity", 'isQuantity("1.3G") && isQuantity("1.3Gi") && isQuantity("10000k")', True),
    ("isQuantity-bad-suffix", 'isQuantity("200K")', False),
    ("isQuantity-comma", 'isQuantity("1,3G")', False),
    ("isQuantity-words", 'isQuantity("Three") || isQuantity("Mi")', False),
    ("isQuantity-nonliteral", 'isQuantity(device.attributes["gpu.example.com"].model)', False),
    (
        "quantity-invalid-is-error",
        'quantity("200K") == quantity("1")',
        Err("quantities must match"),
    ),
    (
        "quantity-nonliteral",
        'quantity(string(device.attributes["gpu.example.com"].index) + "Gi").isLessThan(device.capacity["gpu.example.com"].memory)',
        True,
    ),
    ("quantity-isInteger", 'quantity("50k").isInteger() && !quantity("0.5").isInteger()', True),
    ("quantity-asInteger", 'quantity("50k").asInteger() == 50000', True),
    (
        "quantity-asInteger-capacity",
        'device.capacity["gpu.example.com"].memory.asInteger() == 42949672960',
        True,
    ),
    (
        "quantity-asInteger-fraction-is-error",
        'quantity("0.5").asInteger() == 0',
        Err("cannot convert value to integer"),
    ),
    (
        "quantity-asApproximateFloat",
        'device.capacity["gpu.example.com"].memory.asApproximateFloat() == 42949672960.0',
        True,
    ),
    (
        "quantity-sign",
        'quantity("-3").sign() == -1 && quantity("0").sign() == 0 && device.capacity["gpu.example.com"].cores.sign() == 1',
        True,
    ),
    ("quantity-add-int", 'quantity("50k").add(20) == quantity("50020")', True),
    ("quantity-sub-int", 'quantity("50k").sub(20000) == quantity("30k")', True),
    (
        "quantity-add-sub-chain",
        'quantity("50k").add(20).sub(quantity("100k")).sub(-50000) == quantity("20")',
        True,
    ),
    (
        "quantity-add-capacity",
        'device.capacity["gpu.example.com"].memory.add(quantity("8Gi")) == quantity("48Gi")',
        True,
    ),
    (
        "quantity-vs-semver-is-error",
        'device.capacity["gpu.example.com"].memory.isGreaterThan(device.attributes["gpu.example.com"].firmware)',
        Err("no such overload"),
    ),
    # lists (Kubernetes library and extension)
    ("list-max", "[1, 3, 2].max() == 3", True),
    ("list-min", "[3, 1, 2].min() == 1", True),
    ("list-max-strings", '["b", "c", "a"].max() == "c"', True),
    ("list-max-empty-is-error", "dyn([]).max() == 1", Err("max called on an empty list")),
    ("list-sum", "[1, 3].sum() == 4", True),
    ("list-sum-double", "[1.0, 3.0].sum() == 4.0", True),
    ("list-sum-empty", "[].sum() == 0", True),
    (
        "list-sum-dyn",
        'device.attributes["gpu.example.com"].all(k, true) && [device.attributes["gpu.example.com"].index, 4].sum() == 7',
        True,
    ),
    (
        "list-isSorted",
        '[1, 2, 3].isSorted() && ["a", "b", "b", "c"].isSorted() && [].isSorted()',
        True,
    ),
    ("list-isSorted-false", "[2.0, 1.0].isSorted()", False),
    ("list-sort", "[3, 1, 2].sort() == [1, 2, 3]", True),
    ("list-distinct", "[1, 1, 2].distinct() == [1, 2]", True),
    ("list-flatten", "[[1], [2, 3]].flatten() == [1, 2, 3]", True),
    ("list-range", "lists.range(3) == [0, 1, 2]", True),
    ("list-slice", "[1, 2, 3].slice(1, 2) == [2]", True),
    ("list-reverse", "[1, 2].reverse() == [2, 1]", True),
    # sets
    ("sets-contains", "sets.contains([1, 2, 3], [2])", True),
    ("sets-intersects", "sets.intersects([1], [2])", False),
    ("sets-equivalent", "sets.equivalent([1, 2], [2, 1, 1])", True),
]


@pytest.mark.parametrize(
    ("expression", "expected"), [pytest.param(e, x, id=i) for i, e, x in SELECTORS]
)
def test_selector(expression: str, expected: bool | Err) -> None:
    program = cel.compile_selector(expression)
    if isinstance(expected, Err):
        with pytest.raises(cel.EvaluationError) as info:
            cel.evaluate(program, gpu())
        assert expected.text in str(info.value)
    else:
        assert cel.evaluate(program, gpu()) is expected


# -- KEP-5254 constraints on real device sets -------------------------------------------------

MLA = "mla.example.com"

CONTIGUOUS = (
    "size(devices) == 4 && "
    "devices.map(d, d.attributes['mla.example.com'].index).max() - "
    "devices.map(d, d.attributes['mla.example.com'].index).min() == 3"
)

GRID = """size(devices) == 4 &&
devices.all(d,
    devices.filter(other,
        d != other &&
        ((d.attributes["mla.example.com"].row == other.attributes["mla.example.com"].row &&
          (d.attributes["mla.example.com"].col == other.attributes["mla.example.com"].col + 1 ||
           d.attributes["mla.example.com"].col == other.attributes["mla.example.com"].col - 1)) ||
         (d.attributes["mla.example.com"].col == other.attributes["mla.example.com"].col &&
          (d.attributes["mla.example.com"].row == other.attributes["mla.example.com"].row + 1 ||
           d.attributes["mla.example.com"].row == other.attributes["mla.example.com"].row - 1))
        )
    ).size() >= 2
)"""


def mla(index: int, row: int = 0, col: int = 0) -> cel.DeviceValue:
    """A device of a ring/grid as a driver publishes it: bare attribute names."""
    return cel.device_value(
        MLA,
        {
            "name": f"mla-{index}",
            "attributes": {
                "index": {"int": index},
                "row": {"int": row},
                "col": {"int": col},
                "model": {"string": "m1"},
            },
            "capacity": {"memory": {"value": "16Gi"}},
        },
    )


def grid(*cells: tuple[int, int]) -> list[cel.DeviceValue]:
    return [mla(i, r, c) for i, (r, c) in enumerate(cells)]


CONSTRAINTS: list[tuple[str, str, list[cel.DeviceValue], bool | Err]] = [
    ("contiguous-true", CONTIGUOUS, [mla(i) for i in (2, 3, 4, 5)], True),
    ("contiguous-any-order", CONTIGUOUS, [mla(i) for i in (5, 3, 2, 4)], True),
    ("contiguous-gap", CONTIGUOUS, [mla(i) for i in (2, 3, 5, 7)], False),
    ("contiguous-too-few", CONTIGUOUS, [mla(i) for i in (2, 3, 4)], False),
    ("grid-2x2", GRID, grid((0, 0), (0, 1), (1, 0), (1, 1)), True),
    ("grid-2x2-elsewhere", GRID, grid((4, 6), (5, 7), (4, 7), (5, 6)), True),
    ("grid-line", GRID, grid((0, 0), (0, 1), (0, 2), (0, 3)), False),
    ("grid-l-shape", GRID, grid((0, 0), (0, 1), (1, 0), (2, 0)), False),
    ("grid-diagonal", GRID, grid((0, 0), (1, 1), (2, 2), (3, 3)), False),
    ("grid-too-few", GRID, grid((0, 0), (0, 1), (1, 0)), False),
    (
        "same-model",
        'devices.all(d, d.attributes["mla.example.com"].model == devices[0].attributes["mla.example.com"].model)',
        [mla(1), mla(2)],
        True,
    ),
    (
        "missing-attribute-is-error",
        'devices.all(d, d.attributes["mla.example.com"].serial == "x")',
        [mla(1), mla(2)],
        Err("no such key: serial"),
    ),
    (
        "capacity-sum",
        'devices.map(d, d.capacity["mla.example.com"].memory.asInteger()).sum() == 2 * 16 * 1024 * 1024 * 1024',
        [mla(1), mla(2)],
        True,
    ),
]


@pytest.mark.parametrize(
    ("expression", "devices", "expected"),
    [pytest.param(e, d, x, id=i) for i, e, d, x in CONSTRAINTS],
)
def test_constraint(expression: str, devices: list[cel.DeviceValue], expected: bool | Err) -> None:
    program = cel.compile_constraint(expression)
    if isinstance(expected, Err):
        with pytest.raises(cel.EvaluationError) as info:
            cel.evaluate(program, devices)
        assert expected.text in str(info.value)
    else:
        assert cel.evaluate(program, devices) is expected


@pytest.mark.parametrize(
    ("expression", "devices"),
    [
        pytest.param(CONTIGUOUS, [mla(i) for i in (7, 8, 9, 10)], id="contiguous"),
        pytest.param(GRID, grid((0, 0), (0, 1), (1, 0), (1, 1)), id="grid"),
    ],
)
def test_kep_constraints_do_not_depend_on_device_order(
    expression: str, devices: list[cel.DeviceValue]
) -> None:
    program = cel.compile_constraint(expression)
    assert all(cel.evaluate(program, list(p)) for p in itertools.permutations(devices))


# -- quantity and semver against their references ---------------------------------------------

SEMVER_PRECEDENCE = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1",
    "1.1.0",
    "2.0.0",
    "10.0.0",
]


@pytest.mark.parametrize(
    ("lower", "higher"), list(itertools.combinations(SEMVER_PRECEDENCE, 2))[::3]
)
def test_semver_precedence_of_the_specification(lower: str, higher: str) -> None:
    program = cel.compile_selector(
        f'semver("{lower}").isLessThan(semver("{higher}")) && '
        f'semver("{higher}").compareTo(semver("{lower}")) == 1'
    )
    assert cel.evaluate(program, gpu()) is True


def test_variables_are_per_kind() -> None:
    with pytest.raises(cel.CompileError, match="undeclared reference to 'devices'"):
        cel.compile_selector("size(devices) == 1")
    with pytest.raises(cel.CompileError, match="undeclared reference to 'device"):
        cel.compile_constraint("device.driver == 'x'")


def test_device_fields_are_checked_at_compile_time() -> None:
    with pytest.raises(cel.CompileError, match="undefined field 'name'") as info:
        cel.compile_selector('device.name == "gpu-0"')
    assert info.value.position == (1, 7)
    with pytest.raises(cel.CompileError, match="undefined field 'driverName'"):
        cel.compile_constraint('devices.all(d, d.driverName == "x")')


def test_type_errors_of_kubernetes_functions_are_compile_errors() -> None:
    for expression in (
        'quantity("1") + 1 == 2',
        'quantity("1").compareTo(semver("1.0.0")) == 0',
        'semver("1.0.0").isGreaterThan("1.0.0")',
        "quantity(1) == quantity(1)",
    ):
        with pytest.raises(cel.CompileError, match="no matching overload"):
            cel.compile_selector(expression)


def test_mixed_literals_are_rejected_as_upstream() -> None:
    with pytest.raises(cel.CompileError, match="expected type 'int' but found 'string'"):
        cel.compile_selector('[1, "a"].size() == 2')


def test_list_attributes_are_lists() -> None:
    device = cel.device_value(
        DRIVER, {"name": "d", "attributes": {"ids": {"ints": [4, 2, 9]}}, "capacity": {}}
    )
    program = cel.compile_selector('device.attributes["gpu.example.com"].ids.max() == 9')
    assert cel.evaluate(program, device) is True


def test_attribute_without_value_is_an_evaluation_error() -> None:
    with pytest.raises(cel.EvaluationError, match="unsupported attribute value"):
        cel.device_value(DRIVER, {"name": "d", "attributes": {"x": {}}})

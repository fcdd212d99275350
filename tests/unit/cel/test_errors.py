"""Compile errors carry a position; runtime errors are errors, never ``False``; the cache."""

from __future__ import annotations

import pytest

from apiserver import cel
from apiserver.cel import compiler
from apiserver.cel.compiler import Kind, _Cache

DEVICE = cel.device_value(
    "gpu.example.com",
    {"name": "d", "attributes": {"model": {"string": "a100"}}, "capacity": {}},
)


@pytest.mark.parametrize(
    ("expression", "line", "column", "text"),
    [
        ("device.driver ==", 1, 17, "Syntax error"),
        ('device.driver == "a" &&\n  device.attributes["x"].y >\n', 3, 1, "Syntax error"),
        ("device.driver.startsWith(1)", 1, 25, "no matching overload"),
        ("nosuch(device)", 1, 7, "undeclared reference to 'nosuch'"),
        ('device.driver == "a" ||\n device.nme == "x"', 2, 8, "undefined field 'nme'"),
        ("device.driver.matches('(')", 1, 23, "invalid matches argument"),
    ],
)
def test_compile_errors_carry_the_position(
    expression: str, line: int, column: int, text: str
) -> None:
    with pytest.raises(cel.CompileError) as info:
        cel.compile_selector(expression)
    error = info.value
    assert text in error.message
    assert error.position == (line, column)
    assert error.offset is not None
    lines = expression.split("\n")
    assert error.offset == sum(len(x) + 1 for x in lines[: line - 1]) + column - 1


def test_result_type_is_checked_at_compile_time() -> None:
    with pytest.raises(
        cel.CompileError, match="must evaluate to bool or the unknown type, not int"
    ):
        cel.compile_selector("1 + 1")
    with pytest.raises(cel.CompileError, match="not string"):
        cel.compile_selector('"x"')


@pytest.mark.parametrize(
    ("expression", "shown"),
    [
        ("device.driver", "string"),
        ('device.capacity["gpu.example.com"].memory', "kubernetes.Quantity"),
        ('device.capacity["gpu.example.com"]["memory"]', "kubernetes.Quantity"),
        ('device.capacity["gpu.example.com"]', "map(string, kubernetes.Quantity)"),
        ("device.capacity", "map(string, map(string, kubernetes.Quantity))"),
        ("device.attributes", "map(string, map(string, dyn))"),
        ('device.attributes["gpu.example.com"]', "map(string, dyn)"),
        ('true ? device.driver : "x"', "string"),
        ("[device.driver][0]", "string"),
        ("(device.driver)", "string"),
    ],
)
def test_device_fields_have_their_types_at_compile_time(expression: str, shown: str) -> None:
    """Only attribute values are dynamic: a selector that is a driver name or a quantity is
    refused when it is created, as upstream, not when a device is matched."""
    with pytest.raises(cel.CompileError) as info:
        cel.compile_selector(expression)
    assert info.value.message == f"must evaluate to bool or the unknown type, not {shown}"


@pytest.mark.parametrize(
    "expression",
    [
        "devices[0].driver",
        'devices[0].capacity["gpu.example.com"].memory',
    ],
)
def test_device_fields_in_constraints_have_their_types(expression: str) -> None:
    with pytest.raises(cel.CompileError, match="must evaluate to bool"):
        cel.compile_constraint(expression)


@pytest.mark.parametrize(
    "expression",
    [
        'device.attributes["gpu.example.com"].model',  # an attribute value: dynamic
        'device.attributes["gpu.example.com"]["model"]',
        "device.allowMultipleAllocations",
        'has(device.attributes["gpu.example.com"].model)',
        'device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("1Gi"))',
        'device.driver == "x" ? device.attributes["d"].b : false',
    ],
)
def test_boolean_or_dynamic_results_still_compile(expression: str) -> None:
    cel.compile_selector(expression)


def test_dynamic_non_bool_result_is_an_evaluation_error() -> None:
    program = cel.compile_selector('device.attributes["gpu.example.com"].model')
    with pytest.raises(
        cel.EvaluationError, match="CEL result of type string could not be converted to bool"
    ):
        cel.evaluate(program, DEVICE)


@pytest.mark.parametrize(
    ("expression", "text"),
    [
        ('device.attributes["gpu.example.com"].missing', "no such key: missing"),
        ('device.attributes["gpu.example.com"].model > 3', "no such overload"),
        ('int(device.attributes["gpu.example.com"].model) == 1', "cannot convert"),
        ("[1, 2][5] == 1", "index"),
        ("1 / (size(device.driver) - size(device.driver)) == 1", "divide by zero"),
        (
            'quantity(device.attributes["gpu.example.com"].model).sign() == 1',
            "quantities must match",
        ),
    ],
)
def test_runtime_errors_are_raised_not_false(expression: str, text: str) -> None:
    program = cel.compile_selector(expression)
    with pytest.raises(cel.EvaluationError) as info:
        cel.evaluate(program, DEVICE)
    assert text in str(info.value)
    assert not isinstance(info.value, cel.RuntimeLimitError)


def test_false_is_false() -> None:
    program = cel.compile_selector('device.attributes["gpu.example.com"].model == "h100"')
    assert cel.evaluate(program, DEVICE) is False


def test_errors_short_circuit_like_cel() -> None:
    # CEL's logical operators absorb an error when the other side decides the result
    program = cel.compile_selector(
        'device.attributes["gpu.example.com"].missing == 1 || device.driver == "gpu.example.com"'
    )
    assert cel.evaluate(program, DEVICE) is True


def test_error_hierarchy() -> None:
    assert issubclass(cel.CostLimitError, cel.CompileError)
    assert issubclass(cel.RuntimeLimitError, cel.EvaluationError)
    assert not issubclass(cel.EvaluationError, cel.CompileError)
    assert issubclass(cel.CompileError, cel.CELError)


def test_too_long_expression_is_rejected() -> None:
    expression = "true && " * 1300 + "true"
    assert len(expression) > cel.MAX_EXPRESSION_LENGTH
    with pytest.raises(cel.CompileError, match="too long"):
        cel.compile_selector(expression)


def test_too_deeply_nested_expression_is_a_compile_error() -> None:
    with pytest.raises(cel.CompileError, match="recursion"):
        cel.compile_selector("(" * 60 + "true" + ")" * 60)


def test_programs_are_cached_by_text_and_kind() -> None:
    expression = 'device.driver == "cache.example.com"'
    first = cel.compile_selector(expression)
    assert cel.compile_selector(expression) is first
    constraint = cel.compile_constraint("size(devices) == 1")
    assert constraint is cel.compile_constraint("size(devices) == 1")
    assert constraint.kind is Kind.CONSTRAINT
    assert first.kind is Kind.SELECTOR


def test_compile_errors_are_cached_too(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(cel.CompileError) as first:
        cel.compile_selector("device.driver == == 1")

    def build(*_args: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(compiler, "_build", build)
    with pytest.raises(cel.CompileError) as second:
        cel.compile_selector("device.driver == == 1")
    assert second.value is not first.value  # a fresh exception each time
    assert second.value.message == first.value.message
    assert second.value.position == first.value.position


def test_cache_is_bounded_and_least_recently_used_goes_first() -> None:
    cache = _Cache(3)
    programs = [cel.compile_selector(f"device.driver == 'd{i}'") for i in range(4)]
    for i, p in enumerate(programs[:3]):
        cache.put((Kind.SELECTOR, str(i)), p)
    assert cache.get((Kind.SELECTOR, "0")) is programs[0]  # now the most recently used
    cache.put((Kind.SELECTOR, "3"), programs[3])
    assert len(cache) == 3
    assert cache.get((Kind.SELECTOR, "1")) is None
    assert cache.get((Kind.SELECTOR, "0")) is programs[0]


def test_module_cache_stays_within_its_bound() -> None:
    for i in range(compiler.CACHE_SIZE + 10):
        cel.compile_selector(f'device.driver == "bound-{i}"')
    assert len(compiler.cache) <= compiler.CACHE_SIZE

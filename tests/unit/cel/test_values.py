"""Quantities, versions and devices as CEL values; the checked-AST codec."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apiserver import cel
from apiserver.cel import ast, quantity, semver
from apiserver.cel.environment import environment

# -- quantity ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("1", 10**9),
        ("1Ki", 1024 * 10**9),
        ("1.5Gi", 1610612736 * 10**9),
        ("500m", 5 * 10**8),
        ("0.1m", 10**5),
        ("1n", 1),
        ("1u", 1000),
        ("2k", 2000 * 10**9),
        ("1e3", 1000 * 10**9),
        ("1E-3", 10**6),
        ("-2M", -2 * 10**15),
        ("+.5", 5 * 10**8),
        ("0.0000000001", 1),  # rounded up to the nano
        ("-0.0000000001", -1),  # the magnitude is rounded up
        ("10E", (2**63 - 1) * 10**9),  # capped at the largest int64
    ],
)
def test_quantity_parse(text: str, nanos: int) -> None:
    assert quantity.parse(text).nanos == nanos


@pytest.mark.parametrize("text", ["", "1K", "Mi", "1,5", "1.2.3", "1e", "1Gib", " 1", "e3"])
def test_quantity_rejects(text: str) -> None:
    with pytest.raises(quantity.QuantityError):
        quantity.parse(text)


@pytest.mark.parametrize(
    ("text", "canonical"), [("1.5Gi", "1610612736"), ("500m", "0.5"), ("-1.25", "-1.25")]
)
def test_quantity_canonical(text: str, canonical: str) -> None:
    assert quantity.parse(text).canonical == canonical


nanos = st.integers(min_value=-(2**63 - 1) * 10**9, max_value=(2**63 - 1) * 10**9)


@given(nanos, nanos)
def test_quantity_key_order_is_numeric_order(a: int, b: int) -> None:
    ka, kb = quantity.Quantity(a).key, quantity.Quantity(b).key
    assert (ka < kb) == (a < b)
    assert (ka == kb) == (a == b)


@given(nanos)
def test_quantity_round_trips_through_its_cel_value(n: int) -> None:
    value = quantity.Quantity(n)
    assert quantity.from_cel(value.cel()) == value
    assert Fraction(value.canonical) == Fraction(n, 10**9)


# -- semver ------------------------------------------------------------------------------------

identifier = st.one_of(
    st.integers(min_value=0, max_value=10**6).map(str),
    st.from_regex(r"[a-zA-Z-][0-9a-zA-Z-]{0,5}", fullmatch=True),
)
versions = st.builds(
    semver.Version,
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.lists(identifier, max_size=3).map(tuple),
)


def precedence(a: semver.Version, b: semver.Version) -> int:
    """semver.org 2.0.0 section 11, written out."""
    for x, y in ((a.major, b.major), (a.minor, b.minor), (a.patch, b.patch)):
        if x != y:
            return -1 if x < y else 1
    if not a.prerelease or not b.prerelease:
        return (not a.prerelease) - (not b.prerelease)
    for x, y in zip(a.prerelease, b.prerelease, strict=False):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return -1 if int(x) < int(y) else 1
        if x.isdigit() != y.isdigit():
            return -1 if x.isdigit() else 1
        return -1 if x < y else 1
    return (len(a.prerelease) > len(b.prerelease)) - (len(a.prerelease) < len(b.prerelease))


@given(versions, versions)
def test_semver_key_order_is_precedence(a: semver.Version, b: semver.Version) -> None:
    expected = precedence(a, b)
    assert (a.key > b.key) - (a.key < b.key) == expected


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("1.0.0", True),
        ("1.0.0-alpha.1+build.5", True),
        ("01.0.0", False),
        ("1.0", False),
        ("1.0.0-01", False),
        ("v1.0.0", False),
        ("1.0.0+", False),
    ],
)
def test_semver_strict(text: str, ok: bool) -> None:
    assert semver.is_valid(text) is ok


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("v1.2.3", "1.2.3"),
        ("1", "1.0.0"),
        ("1.2", "1.2.0"),
        ("01.02.03", "1.2.3"),
        ("v1.0.0-rc.1", "1.0.0-rc.1"),
    ],
)
def test_semver_normalize(text: str, normalized: str) -> None:
    assert semver.parse(text, normalize=True) == semver.parse(normalized)


def test_semver_short_version_with_prerelease_is_not_normalized() -> None:
    with pytest.raises(semver.SemverError, match="short version"):
        semver.parse("1-rc", normalize=True)


def test_native_patterns_agree_with_the_parsers() -> None:
    samples = ["1", "1.5Gi", "200K", "1.2.3", "v1.2", "1.2.3-rc.1", "01.2.3", ".5", "1.", "abc"]
    program = cel.compile_selector(
        "device.attributes['x'].all(k, "
        "isQuantity(k) == device.attributes['x'][k][0] && "
        "isSemver(k) == device.attributes['x'][k][1] && "
        "isSemver(k, true) == device.attributes['x'][k][2])"
    )
    expected = {
        s: [
            {"bool": _ok(quantity.parse, s)},
            {"bool": semver.is_valid(s)},
            {"bool": semver.is_valid(s, True)},
        ]
        for s in samples
    }
    device = {
        "driver": "x",
        "attributes": {"x": {s: [v["bool"] for v in vs] for s, vs in expected.items()}},
        "capacity": {},
        "allowMultipleAllocations": False,
    }
    assert cel.evaluate(program, device) is True


def _ok(parse: object, text: str) -> bool:
    try:
        parse(text)  # type: ignore[operator]
    except ValueError:
        return False
    return True


# -- devices -----------------------------------------------------------------------------------


def test_device_value_groups_by_domain() -> None:
    value = cel.device_value(
        "gpu.example.com",
        {
            "name": "gpu-0",
            "attributes": {
                "model": {"string": "a100"},
                "example.com/region": {"string": "eu"},
                "v": {"version": "1.0.0"},
            },
            "capacity": {"memory": {"value": "1Gi"}, "example.com/slots": {"value": 4}},
            "allowMultipleAllocations": True,
        },
    )
    assert value["driver"] == "gpu.example.com"
    assert value["attributes"]["gpu.example.com"]["model"] == "a100"
    assert value["attributes"]["example.com"] == {"region": "eu"}
    assert value["attributes"]["gpu.example.com"]["v"] == semver.parse("1.0.0").cel()
    assert value["capacity"]["gpu.example.com"]["memory"] == quantity.parse("1Gi").cel()
    assert value["capacity"]["example.com"]["slots"] == quantity.parse("4").cel()
    assert value["allowMultipleAllocations"] is True


@pytest.mark.parametrize(
    ("attribute", "text"),
    [
        ({}, "unsupported attribute value"),
        ({"int": 1, "string": "x"}, "unsupported attribute value"),
        ({"version": "1.0"}, "invalid semantic version"),
        ({"int": "1"}, "must be an integer"),
    ],
)
def test_device_value_rejects_bad_attributes(attribute: dict[str, object], text: str) -> None:
    with pytest.raises(cel.EvaluationError, match=text):
        cel.device_value("d.example.com", {"name": "x", "attributes": {"a": attribute}})


# -- the checked-AST codec ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        'device.driver == "x"',
        '[1, 2u, 3.5, b"x", null, -7].size() > 0 && has(device.attributes) && {"a": 1}.a == 1',
        "device.attributes.exists(k, v, k == '' || v.size() > 0)",
        'device.attributes[?"a"].orValue({}).size() == 0 && [?optional.none()].size() == 0',
    ],
)
def test_checked_ast_round_trips(expression: str) -> None:
    env = environment("device")
    serialized = env.compile(expression).serialize()
    tree = ast.decode_checked(serialized)
    again = ast.encode_checked(tree)
    assert ast.encode_checked(ast.decode_checked(again)) == again
    assert sorted(n.id for n in ast.walk(tree.expr)) == sorted(
        n.id for n in ast.walk(ast.decode_checked(again).expr)
    )
    planned = env.deserialize(again)
    direct = env.compile(expression)
    device = cel.device_value("x", {"name": "d", "attributes": {"a": {"int": 1}}})
    assert (
        planned.eval(data={"device": device}).value()
        == direct.eval(data={"device": device}).value()
    )

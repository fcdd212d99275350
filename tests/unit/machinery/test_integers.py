"""Integers outside int64 in request bodies: found with their field path, refused with 400."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver import protowire
from apiserver.machinery import errors
from apiserver.machinery.decoding import decode_body
from apiserver.machinery.integers import INT64_MAX, INT64_MIN, Overflow, check_json, parse_int
from apiserver.machinery.patching import apply_json_patch, apply_merge_patch


def _refusal(call: Any) -> errors.StatusError:
    with pytest.raises(errors.StatusError) as caught:
        call()
    assert caught.value.code == 400
    return caught.value


def _field(err: errors.StatusError) -> str:
    causes = (err.details or {}).get("causes", [])
    return str(causes[0]["field"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (str(INT64_MAX), INT64_MAX),
        (str(INT64_MIN), INT64_MIN),
        ("-0", 0),
        ("000000000000000000000000042", 42),
    ],
)
def test_parse_int_keeps_the_int64_range(text: str, expected: int) -> None:
    assert parse_int(text) == expected


@pytest.mark.parametrize("text", [str(INT64_MAX + 1), str(INT64_MIN - 1), "9" * 5000])
def test_parse_int_marks_what_is_outside(text: str) -> None:
    assert isinstance(parse_int(text), Overflow)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"a": {"b": [1, 2, 18446744073709551616]}}', "a.b[2]"),
        (b'{"a": 9223372036854775808}', "a"),
        (b'{"a": -9223372036854775809}', "a"),
        (b'{"x": "12345678901234567890", "y": 1' + b"0" * 30 + b"}", "y"),
    ],
)
def test_a_json_body_names_the_field(body: bytes, field: str) -> None:
    assert _field(_refusal(lambda: decode_body(body, "application/json"))) == field


def test_long_digit_runs_in_strings_are_fine() -> None:
    check_json(b'{"uid": "123456789012345678901234567890"}')
    assert decode_body(b'{"n": 9223372036854775807}', None) == {"n": INT64_MAX}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"a:\n  b: 18446744073709551616\n", "a.b"),
        (b"a: [0x1_0000_0000_0000_0000]\n", "a[0]"),
        (b"a: " + b"9" * 5000 + b"\n", "a"),
    ],
)
def test_a_yaml_body_names_the_field(body: bytes, field: str) -> None:
    assert _field(_refusal(lambda: decode_body(body, "application/yaml"))) == field


def test_yaml_within_range_is_read() -> None:
    assert decode_body(b"a: -9223372036854775808\nb: 1_000\n", "application/yaml") == {
        "a": INT64_MIN,
        "b": 1000,
    }


def test_patches_are_checked() -> None:
    obj = {"spec": {"n": 1}}
    merge = b'{"spec": {"n": 18446744073709551616}}'
    assert _field(_refusal(lambda: apply_merge_patch(obj, merge))) == "spec.n"
    ops = b'[{"op": "replace", "path": "/spec/n", "value": 9223372036854775808}]'
    err = _refusal(lambda: apply_json_patch(obj, ops, "K", "g", "n"))
    assert _field(err) == "[0].value"
    assert obj == {"spec": {"n": 1}}


def test_a_varint_of_more_than_64_bits_is_malformed() -> None:
    assert protowire.read_varint(b"\xff" * 9 + b"\x01", 0) == ((1 << 64) - 1, 10)
    with pytest.raises(protowire.WireError):
        protowire.read_varint(b"\xff" * 9 + b"\x02", 0)
    with pytest.raises(protowire.WireError):
        protowire.read_varint(b"\xff" * 10 + b"\x01", 0)

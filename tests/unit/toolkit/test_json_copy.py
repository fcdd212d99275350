"""``json_copy``: a deep copy of decoded JSON that shares nothing with the original, and
falls back to ``copy.deepcopy`` for values the JSON encoding refuses."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apiserver.toolkit import json_copy

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


def _containers(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in _containers(v))]
    if isinstance(value, list):
        return [value, *(c for v in value for c in _containers(v))]
    return []


@given(JSON_VALUES)
def test_the_copy_equals_the_original_and_shares_no_container(value: Any) -> None:
    copied = json_copy(value)
    assert copied == value
    originals = {id(c) for c in _containers(value)}
    assert not originals & {id(c) for c in _containers(copied)}


def test_changing_the_copy_leaves_the_original_alone() -> None:
    original = {"metadata": {"labels": {"a": "1"}}, "status": {"items": [{"n": 1}]}}
    copied = json_copy(original)
    copied["metadata"]["labels"]["b"] = "2"
    copied["status"]["items"][0]["n"] = 2
    assert original == {"metadata": {"labels": {"a": "1"}}, "status": {"items": [{"n": 1}]}}


class Name(str):
    pass


@pytest.mark.parametrize(
    "value",
    [
        {"big": 2**70},
        {"negative": -(2**64)},
        {1: "not a string key"},
        {"date": datetime.datetime(2026, 1, 2, 3, 4, 5)},
        {"subclass": Name("x")},
    ],
    ids=["past-64-bits", "past-64-bits-negative", "int-key", "date", "str-subclass"],
)
def test_a_value_json_cannot_carry_is_copied_as_it_is(value: dict[Any, Any]) -> None:
    copied = json_copy(value)
    assert copied == value
    assert [type(v) for v in copied.values()] == [type(v) for v in value.values()]
    assert copied is not value

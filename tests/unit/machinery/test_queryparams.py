"""Strict parsing of query parameters: booleans as Kubernetes spells them, 64-bit counts."""

from __future__ import annotations

import pytest

from apiserver.machinery import queryparams
from apiserver.machinery.errors import StatusError


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True),
        ("True", True),
        ("1", True),
        ("", True),  # ?watch alone asks for a watch, as in Kubernetes
        ("false", False),
        ("FALSE", False),
        ("0", False),
    ],
)
def test_boolean_spellings(value: str, expected: bool) -> None:
    assert queryparams.boolean({"watch": value}, "watch") is expected


def test_absent_boolean_is_none_and_its_flag_false() -> None:
    assert queryparams.boolean({}, "watch") is None
    assert queryparams.flag({}, "watch") is False


@pytest.mark.parametrize("value", ["maybe", "yes", "2", "t", "truee", " true"])
def test_other_booleans_are_refused(value: str) -> None:
    with pytest.raises(StatusError) as caught:
        queryparams.boolean({"watch": value}, "watch")
    assert caught.value.code == 400
    assert "watch" in caught.value.message


@pytest.mark.parametrize(
    ("value", "expected"),
    [("0", 0), ("500", 500), ("+7", 7), (str(2**63 - 1), 2**63 - 1), ("", None)],
)
def test_count_values(value: str, expected: int | None) -> None:
    assert queryparams.count({"limit": value}, "limit") == expected


@pytest.mark.parametrize(
    "value", ["-1", "1.5", "1e3", "abc", "0x10", " 5", str(2**63), "99999999999999999999999"]
)
def test_bad_counts_are_refused(value: str) -> None:
    with pytest.raises(StatusError) as caught:
        queryparams.count({"limit": value}, "limit")
    assert caught.value.code == 400
    assert "limit" in caught.value.message


def test_check_refuses_a_bad_parameter_of_any_verb() -> None:
    queryparams.check({"limit": "10", "watch": "true", "labelSelector": "a=b"})
    with pytest.raises(StatusError):
        queryparams.check({"timeoutSeconds": "soon"})


def test_a_long_bad_value_is_not_echoed_whole() -> None:
    with pytest.raises(StatusError) as caught:
        queryparams.boolean({"watch": "x" * 100_000}, "watch")
    assert len(caught.value.message) < 1000

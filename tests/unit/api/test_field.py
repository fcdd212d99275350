"""Field errors: how a bad value is shown in the message."""

from __future__ import annotations

from apiserver.api import field
from apiserver.machinery import errors


def test_short_values_are_shown_whole() -> None:
    err = field.invalid("metadata.name", "Bad_Name", "must be lower case")
    assert err.message() == 'Invalid value: "Bad_Name": must be lower case'


def test_long_string_values_are_cut_with_a_note() -> None:
    err = field.invalid("metadata.name", "a" * 10_000, "must be no more than 253 characters")
    shown = "a" * field.MAX_SHOWN
    assert err.message() == (
        f'Invalid value: "{shown}...({10_000 - field.MAX_SHOWN} more characters truncated)"'
        ": must be no more than 253 characters"
    )


def test_long_structured_values_are_cut_with_a_note() -> None:
    err = field.invalid("spec", {"k": "v" * 5_000}, "bad")
    assert "more characters truncated)" in err.message()
    assert len(err.message()) < 2 * field.MAX_SHOWN


def test_long_map_keys_in_the_path_are_cut() -> None:
    err = field.invalid(f"metadata.labels[{'k' * 100_000}]", "v", "bad key")
    assert len(str(err)) < 8 * field.MAX_SHOWN
    assert str(err).endswith('more characters truncated): Invalid value: "v": bad key')


def test_invalid_status_shortens_the_name_in_message_and_details() -> None:
    status = errors.invalid(
        "ResourceSlicePatch", "resource.k8s.io", "n" * 100_000, [field.required("spec", "")]
    ).status()
    assert len(status["message"]) < 2 * field.MAX_SHOWN
    assert status["details"]["name"].startswith("n" * field.MAX_SHOWN + "...(")


def _two_problems(value: str) -> list[str]:
    return [f"{value} is odd", f"{value} is long"] if value != "good" else []


def test_required_name_is_required_when_empty() -> None:
    for empty in ("", None):
        errs = field.required_name(field.Path("spec").child("name"), empty, _two_problems, "why")
        assert [(e.type, e.field, e.detail) for e in errs] == [
            (field.ErrorType.REQUIRED, "spec.name", "why")
        ]


def test_required_name_gives_each_problem_of_its_rule_as_invalid() -> None:
    errs = field.required_name("spec.name", "bad", _two_problems)
    assert [str(e) for e in errs] == [
        'spec.name: Invalid value: "bad": bad is odd',
        'spec.name: Invalid value: "bad": bad is long',
    ]
    assert field.required_name("spec.name", "good", _two_problems) == []


def test_required_name_past_its_length_is_too_long_alone() -> None:
    errs = field.required_name("spec.name", "bad", _two_problems, max_length=2)
    assert [(e.type, e.detail) for e in errs] == [
        (field.ErrorType.TOO_LONG, "may not be more than 2 bytes")
    ]
    assert len(field.required_name("spec.name", "bad", _two_problems, max_length=3)) == 2


def test_invalid_each_shows_the_value_given_for_every_problem() -> None:
    errs = field.invalid_each(field.Path("key"), "Whole/part", ["p1", "p2"])
    assert [(e.field, e.value, e.detail) for e in errs] == [
        ("key", "Whole/part", "p1"),
        ("key", "Whole/part", "p2"),
    ]


def test_at_least_and_in_range_leave_unset_values_alone() -> None:
    assert field.at_least("n", None, 0) == field.in_range("n", None, 1, 3) == []
    assert field.at_least("n", 0, 0) == field.in_range("n", 3, 1, 3) == []
    assert [str(e) for e in field.at_least("n", 0, 1)] == [
        "n: Invalid value: 0: must be greater than or equal to 1"
    ]
    assert [str(e) for e in field.in_range("n", 4, 1, 3)] == [
        "n: Invalid value: 4: must be between 1 and 3, inclusive"
    ]

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

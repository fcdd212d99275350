"""Name rules (``api.names``): the one-pass check of many DNS-1123 subdomains says exactly
what the per-name rule says, over random strings of the characters that matter; a trailing
newline is no part of a valid name."""

from __future__ import annotations

import random

import pytest

from apiserver.api.names import (
    DNS1123_SUBDOMAIN_MAX,
    all_dns1123_subdomains,
    dns1123_label_errors,
    dns1123_subdomain_errors,
)

ALPHABET = "ab9-.\nA_"


def _value(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 7)))


@pytest.mark.parametrize("seed", range(5))
def test_all_subdomains_agrees_with_the_rule_name_by_name(seed: int) -> None:
    rng = random.Random(seed)
    valid = invalid = 0
    for _ in range(4000):
        values = [_value(rng) for _ in range(rng.randrange(1, 4))]
        if rng.random() < 0.5:  # mostly valid lists too, or nearly all would fail
            values = [v.replace("\n", "").replace("A", "a").replace("_", "-") for v in values]
            values = [
                v.strip("-.").replace("..", ".").replace(".-", ".a").replace("-.", "a.") or "x"
                for v in values
            ]
        expected = all(not dns1123_subdomain_errors(v) for v in values)
        assert all_dns1123_subdomains(values) == expected, values
        valid += expected
        invalid += not expected
    assert valid > 500  # both answers were exercised
    assert invalid > 500


def test_the_length_limit() -> None:
    longest = "a" * DNS1123_SUBDOMAIN_MAX
    assert all_dns1123_subdomains([longest, "b"])
    assert not all_dns1123_subdomains(["b", longest + "a"])
    assert all_dns1123_subdomains([])


def test_a_trailing_newline_is_not_part_of_a_name() -> None:
    assert dns1123_subdomain_errors("node-1\n")
    assert dns1123_label_errors("default\n")
    assert not all_dns1123_subdomains(["node-1\n"])

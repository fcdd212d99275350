"""Options declared once (``toolkit.options``): a dataclass's fields make the flags, the
parsed flags make the dataclass back, and checks name the flag they refuse."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from apiserver.toolkit.options import (
    add_flags,
    flag_values,
    from_args,
    nested,
    non_negative,
    option,
    problems,
    string_slice,
    switch,
    toggle,
    validated,
)


@dataclass
class Inner:
    depth: int = option("--depth", 3, "how deep", check=non_negative)
    names: list[str] = string_slice("--names", ["a"], "names to use")
    not_a_flag: int = 7

    def validate(self) -> list[str]:
        return ["--depth 0 needs --names"] if self.depth == 0 and not self.names else []


@dataclass
class Outer:
    target: str = option("--target", help="where to go")
    ratio: float = option("--ratio", 0.5, "a share, {default} unless given")
    mode: str = option("--mode", "fast", "how to go", choices=("fast", "slow"))
    tags: list[str] = option("--tag", [], "a tag; repeatable", action="append")
    verbose: bool = switch("--verbose", "say more")
    cache: bool = toggle("--cache", True, "keep a cache")
    inner: Inner = nested(Inner, "inner things", "what the inner part takes")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="t")
    add_flags(parser, Outer)
    return parser


def _parse(*argv: str) -> Outer:
    return from_args(Outer, _parser().parse_args(list(argv)))


def test_flags_not_given_take_the_fields_defaults() -> None:
    assert _parse("--target", "x") == Outer(target="x")


def test_each_kind_of_flag_reaches_its_field() -> None:
    options = _parse(
        "--target=x",
        "--ratio=0.25",
        "--mode=slow",
        "--tag=a",
        "--tag=b",
        "--verbose",
        "--no-cache",
        "--depth=9",
        "--names=p, q",
        "--names=r",
    )
    assert options == Outer(
        target="x",
        ratio=0.25,
        mode="slow",
        tags=["a", "b"],
        verbose=True,
        cache=False,
        inner=Inner(depth=9, names=["p", "q", "r"]),
    )


def test_a_given_list_replaces_the_default_and_defaults_are_not_shared() -> None:
    first, second = _parse("--target=x"), _parse("--target=x", "--names=z")
    assert (first.inner.names, second.inner.names) == (["a"], ["z"])
    first.inner.names.append("changed")
    first.tags.append("changed")
    assert _parse("--target=x").inner.names == ["a"]
    assert _parse("--target=x").tags == []


def test_a_flag_without_a_default_is_required() -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args([])


def test_help_shows_each_default_once_and_nested_concerns_in_their_section() -> None:
    text = " ".join(_parser().format_help().split())
    assert "a share, 0.5 unless given" in text
    assert "how to go (default fast)" in text
    assert "keep a cache (default on)" in text
    assert "(default: True)" not in text  # argparse's own suffix of --x/--no-x
    assert "how deep (default 3)" in text
    assert "names to use (default a)" in text
    assert "a tag; repeatable (default none)" in text
    assert "say more" in text
    assert "say more (default" not in text
    section = text.index("inner things: what the inner part takes")
    assert text.index("--depth DEPTH how deep") > section
    assert text.index("--cache, --no-cache keep") < section
    assert "not_a_flag" not in text
    assert "NOT_A_FLAG" not in text


def test_flag_values_name_every_flag_nested_or_not() -> None:
    assert flag_values(Outer(target="x")) == {
        "--target": "x",
        "--ratio": 0.5,
        "--mode": "fast",
        "--tag": [],
        "--verbose": False,
        "--cache": True,
        "--depth": 3,
        "--names": ["a"],
    }


def test_problems_name_the_flag_choices_checks_and_validate() -> None:
    assert problems(Outer(target="x")) == []
    bad = Outer(target="x", mode="sideways", inner=Inner(depth=-1))
    found = problems(bad)
    assert len(found) == 2
    assert found[0].startswith("--mode ")
    assert "sideways" in found[0]
    assert found[1].startswith("--depth ")
    assert "-1" in found[1]
    assert problems(Outer(target="x", inner=Inner(depth=0, names=[]))) == [
        "--depth 0 needs --names"
    ]
    with pytest.raises(ValueError, match="--mode") as refused:
        validated(bad)
    assert "--depth" in str(refused.value)

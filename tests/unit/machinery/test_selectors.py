"""Label and field selectors: the Kubernetes grammar, matching semantics and 400 on bad input."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apiserver.machinery import (
    FieldGetter,
    FieldRequirement,
    LabelRequirement,
    parse_field_selector,
    parse_label_selector,
)
from apiserver.machinery.errors import StatusError

# -- label selector grammar -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("a=b", [LabelRequirement("a", "=", ("b",))]),
        ("a==b", [LabelRequirement("a", "=", ("b",))]),
        ("a!=b", [LabelRequirement("a", "!=", ("b",))]),
        ("a=", [LabelRequirement("a", "=", ("",))]),
        ("a in (x,y)", [LabelRequirement("a", "in", ("x", "y"))]),
        ("a in ( x , y )", [LabelRequirement("a", "in", ("x", "y"))]),
        ("a notin(x)", [LabelRequirement("a", "notin", ("x",))]),
        ("a in ()", [LabelRequirement("a", "in", ("",))]),
        # As in Kubernetes, empty places in a value list stand for the empty value.
        ("a in (x,)", [LabelRequirement("a", "in", ("x", ""))]),
        ("a in (x,,y)", [LabelRequirement("a", "in", ("x", "", "y"))]),
        ("a", [LabelRequirement("a", "exists")]),
        ("!a", [LabelRequirement("a", "!")]),
        ("a>1", [LabelRequirement("a", ">", ("1",))]),
        ("a < -3", [LabelRequirement("a", "<", ("-3",))]),
        ("in=x", [LabelRequirement("in", "=", ("x",))]),
        (
            "example.com/gpu in (v1, v2),tier!=db, !legacy",
            [
                LabelRequirement("example.com/gpu", "in", ("v1", "v2")),
                LabelRequirement("tier", "!=", ("db",)),
                LabelRequirement("legacy", "!"),
            ],
        ),
        (
            " app = web , env ",
            [LabelRequirement("app", "=", ("web",)), LabelRequirement("env", "exists")],
        ),
    ],
)
def test_label_selector_parses(text: str, expected: list[LabelRequirement]) -> None:
    selector = parse_label_selector(text)
    assert list(selector.requirements) == expected
    assert selector.empty is (not expected)


@pytest.mark.parametrize(
    "text",
    [
        "a=b,",  # trailing comma
        ",a=b",  # leading comma
        "a=b c",  # two values
        "a b",  # no operator
        "a=b=c",
        "!a=b",  # negation takes no value
        "!",
        "a!",
        "a in (x",  # unclosed
        "a in x",  # no parenthesis
        "a in (x y)",  # values not separated by commas
        "a>x",  # not an integer
        "a<",
        "a>1.5",
        "a=(b)",
        "_a=b",  # invalid key
        "a/b/c=d",
        "-a",
        "a=-b",  # invalid value
        "a=" + "x" * 64,  # value too long
        "a in (ok,-bad)",
        ("p" * 64) + "=v",  # name part too long
    ],
)
def test_malformed_label_selector_is_a_400(text: str) -> None:
    with pytest.raises(StatusError) as info:
        parse_label_selector(text)
    assert info.value.code == 400
    assert info.value.reason == "BadRequest"
    assert "unable to parse requirement" in info.value.message


# -- label matching ---------------------------------------------------------------------


LABELS: dict[str, str] = {"app": "web", "tier": "front", "replicas": "3", "empty": ""}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("missing=x", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),  # != matches objects lacking the key
        ("app in (web,db)", True),
        ("app in (db)", False),
        ("missing in (x)", False),
        ("app notin (db)", True),
        ("app notin (web,db)", False),
        ("missing notin (x)", True),  # notin matches objects lacking the key
        ("app", True),
        ("missing", False),
        ("!app", False),
        ("!missing", True),
        ("empty=", True),
        ("empty", True),
        ("app=", False),
        ("replicas>2", True),
        ("replicas>3", False),
        ("replicas<4", True),
        ("replicas<3", False),
        ("replicas>-1", True),
        ("app>1", False),  # not an integer label: never matches
        ("missing<10", False),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("app=web,!missing,replicas<10", True),
    ],
)
def test_label_selector_matches(text: str, matches: bool) -> None:
    assert parse_label_selector(text).matches(LABELS) is matches


def test_label_selector_on_object_without_labels() -> None:
    assert parse_label_selector("").matches(None) is True
    assert parse_label_selector("a!=b").matches(None) is True
    assert parse_label_selector("a notin (b)").matches({}) is True
    assert parse_label_selector("a").matches(None) is False
    assert parse_label_selector("a=b").matches(None) is False


label_keys = st.sampled_from(["a", "b", "example.com/c"])
label_values = st.sampled_from(["", "x", "y", "1", "20"])
label_maps = st.dictionaries(label_keys, label_values)


@given(labels=label_maps, k=label_keys, v=label_values)
def test_negated_operators_are_complements(labels: dict[str, str], k: str, v: str) -> None:
    assert parse_label_selector(f"{k}!={v}").matches(labels) is not parse_label_selector(
        f"{k}={v}"
    ).matches(labels)
    assert parse_label_selector(f"{k} notin ({v})").matches(labels) is not (
        parse_label_selector(f"{k} in ({v})").matches(labels)
    )
    assert parse_label_selector(f"!{k}").matches(labels) is not parse_label_selector(k).matches(
        labels
    )


@given(labels=label_maps)
def test_selector_built_from_labels_matches_them(labels: dict[str, str]) -> None:
    text = ",".join(f"{k}={v}" for k, v in labels.items())
    assert parse_label_selector(text).matches(labels)
    for k in labels:
        other = {**labels, k: labels[k] + "z"}
        assert not parse_label_selector(text).matches(other)


# -- field selectors ----------------------------------------------------------------------


def _get(*keys: str) -> FieldGetter:
    def get(obj: dict[str, Any]) -> str | None:
        cur: Any = obj
        for k in keys:
            cur = cur.get(k) if isinstance(cur, dict) else None
        return cur if isinstance(cur, str) else None

    return get


GETTERS: dict[str, FieldGetter] = {
    "metadata.name": _get("metadata", "name"),
    "spec.driver": _get("spec", "driver"),
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("metadata.name=a", [FieldRequirement("metadata.name", "a", True)]),
        ("metadata.name==a", [FieldRequirement("metadata.name", "a", True)]),
        ("metadata.name!=a", [FieldRequirement("metadata.name", "a", False)]),
        ("metadata.name=", [FieldRequirement("metadata.name", "", True)]),
        (r"metadata.name=a\,b", [FieldRequirement("metadata.name", "a,b", True)]),
        (r"metadata.name=a\=b", [FieldRequirement("metadata.name", "a=b", True)]),
        (r"metadata.name=a\\b", [FieldRequirement("metadata.name", "a\\b", True)]),
        ("metadata.name=a,", [FieldRequirement("metadata.name", "a", True)]),
        (
            "metadata.name!=a,spec.driver=gpu.example.com",
            [
                FieldRequirement("metadata.name", "a", False),
                FieldRequirement("spec.driver", "gpu.example.com", True),
            ],
        ),
    ],
)
def test_field_selector_parses(text: str, expected: list[FieldRequirement]) -> None:
    selector = parse_field_selector(text, GETTERS)
    assert list(selector.requirements) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("spec.other=x", "field label not supported: spec.other"),
        ("status.phase!=x", "field label not supported: status.phase"),
        ("metadata.name", "can't understand"),
        ("metadata.name=a,bogus", "can't understand"),
        (r"metadata.name=a\q", "invalid escape sequence"),
        ("metadata.name=a\\", "invalid escape sequence"),
        ("metadata.name==a=b", "unescaped"),
        ("metadata.name=a!=b", "unescaped"),
    ],
)
def test_bad_field_selector_is_a_400(text: str, message: str) -> None:
    with pytest.raises(StatusError) as info:
        parse_field_selector(text, GETTERS)
    assert info.value.code == 400
    assert message in info.value.message


OBJ: dict[str, Any] = {"metadata": {"name": "a,b"}, "spec": {"driver": "gpu.example.com"}}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("", True),
        (r"metadata.name=a\,b", True),
        ("metadata.name=a", False),
        ("metadata.name!=a", True),
        (r"metadata.name!=a\,b", False),
        (r"metadata.name=a\,b,spec.driver=gpu.example.com", True),
        (r"metadata.name=a\,b,spec.driver!=gpu.example.com", False),
    ],
)
def test_field_selector_matches(text: str, matches: bool) -> None:
    assert parse_field_selector(text, GETTERS).matches(OBJ, GETTERS) is matches


def test_missing_field_compares_as_empty() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "x"}}
    assert parse_field_selector("spec.driver=", GETTERS).matches(obj, GETTERS)
    assert parse_field_selector("spec.driver!=gpu", GETTERS).matches(obj, GETTERS)
    assert not parse_field_selector("spec.driver=gpu", GETTERS).matches(obj, GETTERS)


def test_exact_names_the_pinned_value_only_for_equality() -> None:
    assert parse_field_selector("metadata.name=a", GETTERS).exact("metadata.name") == "a"
    assert parse_field_selector("metadata.name==a", GETTERS).exact("metadata.name") == "a"
    assert parse_field_selector("metadata.name!=a", GETTERS).exact("metadata.name") is None
    assert parse_field_selector("spec.driver=x", GETTERS).exact("metadata.name") is None

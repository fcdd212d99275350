"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) on stored objects, with Status errors."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from apiserver.machinery.errors import StatusError
from apiserver.machinery.patching import apply_json_patch, apply_merge_patch, merge_patch

# -- RFC 7386 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        # The examples of RFC 7386, Appendix A.
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
        # Deleting what is not there is fine; nested objects merge deeply.
        ({"a": 1}, {"zz": None}, {"a": 1}),
        ({"a": {"b": {"c": 1, "d": 2}}}, {"a": {"b": {"c": 3}}}, {"a": {"b": {"c": 3, "d": 2}}}),
    ],
)
def test_merge_patch_rfc7386(target: Any, patch: Any, expected: Any) -> None:
    before = copy.deepcopy(target)
    assert merge_patch(target, patch) == expected
    assert target == before


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["a", "b"]),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from("abc"), children, max_size=3)
    ),
    max_leaves=10,
)
json_objects = st.dictionaries(st.sampled_from("abcd"), json_values, max_size=4)


@given(target=json_objects, patch=json_objects)
def test_merge_patch_is_idempotent_and_leaves_no_nulls_it_set(
    target: dict[str, Any], patch: dict[str, Any]
) -> None:
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once
    for key, value in patch.items():
        if value is None:
            assert key not in once
        elif not isinstance(value, dict):
            assert once[key] == value


def test_apply_merge_patch_deletes_with_null() -> None:
    obj = {"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}}, "spec": {"n": 1}}
    patched = apply_merge_patch(obj, b'{"metadata": {"labels": {"a": null}}, "spec": {"m": 2}}')
    assert patched == {"metadata": {"name": "p", "labels": {"b": "2"}}, "spec": {"n": 1, "m": 2}}
    assert obj["metadata"]["labels"] == {"a": "1", "b": "2"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{", "error decoding patch"),
        (b"[1]", "must be a JSON object"),
        (b"null", "must be a JSON object"),
        (b'"x"', "must be a JSON object"),
    ],
)
def test_bad_merge_patch_is_a_400(body: bytes, message: str) -> None:
    with pytest.raises(StatusError) as info:
        apply_merge_patch({"a": 1}, body)
    assert info.value.code == 400
    assert message in info.value.message


# -- RFC 6902 ------------------------------------------------------------------------------------

OBJ: dict[str, Any] = {
    "metadata": {"name": "p", "labels": {"a": "1"}},
    "spec": {"list": [1, 2], "n": 1, "a/b": "slash", "m~n": "tilde"},
}


def json_patch(*ops: dict[str, Any]) -> dict[str, Any]:
    return apply_json_patch(copy.deepcopy(OBJ), orjson.dumps(list(ops)), "Kind", "g.io", "p")


def test_json_patch_operations() -> None:
    patched = json_patch(
        {"op": "test", "path": "/spec/n", "value": 1},
        {"op": "add", "path": "/spec/list/-", "value": 3},
        {"op": "add", "path": "/spec/list/0", "value": 0},
        {"op": "replace", "path": "/metadata/labels/a", "value": "2"},
        {"op": "remove", "path": "/spec/a~1b"},
        {"op": "move", "from": "/spec/m~0n", "path": "/spec/moved"},
        {"op": "copy", "from": "/spec/n", "path": "/spec/copied"},
    )
    assert patched == {
        "metadata": {"name": "p", "labels": {"a": "2"}},
        "spec": {"list": [0, 1, 2, 3], "n": 1, "moved": "tilde", "copied": 1},
    }


def test_json_patch_does_not_touch_its_input() -> None:
    obj = copy.deepcopy(OBJ)
    apply_json_patch(obj, b'[{"op":"remove","path":"/spec/n"}]', "Kind", "g.io", "p")
    assert obj == OBJ


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "test", "path": "/spec/n", "value": 2}],  # a failing test
        [
            {"op": "replace", "path": "/spec/n", "value": 5},
            {"op": "test", "path": "/spec/list/0", "value": 9},
        ],
        [{"op": "remove", "path": "/spec/missing"}],
        [{"op": "replace", "path": "/spec/list/9", "value": 3}],
        [{"op": "add", "path": "/no/such/parent", "value": 1}],
        [{"op": "add", "path": "/spec/list/x", "value": 1}],
        [{"op": "copy", "from": "/nope", "path": "/spec/x"}],
        [{"op": "bogus", "path": "/spec/n"}],
        [{"op": "add", "value": 1}],
        [{"op": "add", "path": "spec", "value": 1}],
        [1],
        [None],
    ],
)
def test_json_patch_that_cannot_apply_is_a_422(ops: list[Any]) -> None:
    body = orjson.dumps(ops)
    with pytest.raises(StatusError) as info:
        apply_json_patch(copy.deepcopy(OBJ), body, "Kind", "g.io", "p")
    err = info.value
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message.startswith('Kind.g.io "p" is invalid: patch: ')
    assert err.details is not None
    assert [c["field"] for c in err.details["causes"]] == ["patch"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[", "error decoding patch"),
        (b'{"op": "add"}', "must be an array"),
        (b'[{"op": "replace", "path": "", "value": 5}]', "did not produce an object"),
    ],
)
def test_malformed_json_patch_is_a_400(body: bytes, message: str) -> None:
    with pytest.raises(StatusError) as info:
        apply_json_patch(copy.deepcopy(OBJ), body, "Kind", "g.io", "p")
    assert info.value.code == 400
    assert message in info.value.message


def test_a_json_patch_that_keeps_doubling_a_value_is_413() -> None:
    """Repeated "copy" of a value into itself would double the object each time; the bytes
    copied are capped, so a 1 KB patch cannot build a huge object."""
    obj: dict[str, Any] = {"spec": {"a": ["x" * 1000]}}
    ops = [{"op": "copy", "from": "/spec/a", "path": "/spec/a/-"} for _ in range(40)]
    with pytest.raises(StatusError) as caught:
        apply_json_patch(obj, orjson.dumps(ops), "K", "g", "n")
    assert (caught.value.code, caught.value.reason) == (413, "RequestEntityTooLarge")
    assert obj == {"spec": {"a": ["x" * 1000]}}  # the stored object is untouched


def test_a_few_copies_are_fine() -> None:
    obj: dict[str, Any] = {"spec": {"a": 1}}
    ops = [{"op": "copy", "from": "/spec/a", "path": f"/spec/b{i}"} for i in range(3)]
    assert apply_json_patch(obj, orjson.dumps(ops), "K", "g", "n")["spec"] == {
        "a": 1,
        "b0": 1,
        "b1": 1,
        "b2": 1,
    }


def test_too_many_json_patch_operations_is_413() -> None:
    ops = [{"op": "test", "path": "/spec", "value": {}}] * 10_001
    with pytest.raises(StatusError) as caught:
        apply_json_patch({"spec": {}}, orjson.dumps(ops), "K", "g", "n")
    assert caught.value.code == 413


@pytest.mark.parametrize(
    ("ops", "says"),
    [
        (
            [{"op": "test", "path": "/spec/n", "value": 150}],
            "operation 0 (test /spec/n) failed: the value at that path is not 150",
        ),
        (
            [{"op": "add", "path": "/spec/n", "value": 2}, {"op": "remove", "path": "/x"}],
            "operation 1 (remove /x) could not be applied: the path does not exist",
        ),
        ([{"op": "bogus", "path": "/spec/n"}], "operation 0 (bogus /spec/n) is not a valid"),
        ([1], "operation 0 is not an object"),
    ],
)
def test_a_failed_json_patch_operation_is_worded_by_the_server(ops: list[Any], says: str) -> None:
    """Which operation failed and why, in the server's words (not the library's, such as
    ``150 (<class 'int'>) is not equal to ...``)."""
    with pytest.raises(StatusError) as info:
        apply_json_patch(copy.deepcopy(OBJ), orjson.dumps(ops), "Kind", "g.io", "p")
    assert info.value.details is not None
    [cause] = info.value.details["causes"]
    assert says in cause["message"]
    assert "<class" not in cause["message"]

"""Strategic merge patch: merge-patch semantics plus keyed lists, set lists and directives."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from apiserver.api.resource import ResourceClaim, ResourceSlicePatch
from apiserver.machinery.errors import StatusError
from apiserver.machinery.fieldmanager import schema_of
from apiserver.machinery.strategicmerge import apply_strategic_merge_patch, merge_key

RSP = schema_of(ResourceSlicePatch)
CLAIM = schema_of(ResourceClaim)


def smp(obj: dict[str, Any], patch: Any, schema: Any = RSP) -> dict[str, Any]:
    return apply_strategic_merge_patch(obj, orjson.dumps(patch), schema)


def cond(kind: str, status: str = "True") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": "R", "lastTransitionTime": "t", "message": ""}


BASE: dict[str, Any] = {
    "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "finalizers": ["x/a"]},
    "spec": {
        "devices": {"priority": 1, "filter": {"selectors": [{"cel": {"expression": "true"}}]}}
    },
    "status": {"conditions": [cond("A"), cond("B")]},
}


def test_maps_merge_and_null_deletes() -> None:
    out = smp(
        BASE, {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"devices": {"priority": 5}}}
    )
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert out["spec"]["devices"]["priority"] == 5
    assert out["spec"]["devices"]["filter"] == BASE["spec"]["devices"]["filter"]


def test_the_original_is_not_modified() -> None:
    before = orjson.dumps(BASE)
    smp(BASE, {"status": {"conditions": [cond("C")]}, "metadata": {"labels": {"a": None}}})
    assert orjson.dumps(BASE) == before


def test_keyed_list_merges_on_its_key() -> None:
    out = smp(BASE, {"status": {"conditions": [cond("B", "False"), cond("C")]}})
    assert [(c["type"], c["status"]) for c in out["status"]["conditions"]] == [
        ("A", "True"),
        ("B", "False"),
        ("C", "True"),
    ]


def test_atomic_list_is_replaced() -> None:
    patch = {"spec": {"devices": {"filter": {"selectors": [{"cel": {"expression": "false"}}]}}}}
    out = smp(BASE, patch)
    assert out["spec"]["devices"]["filter"]["selectors"] == [{"cel": {"expression": "false"}}]


def test_set_list_is_a_union() -> None:
    out = smp(BASE, {"metadata": {"finalizers": ["x/b", "x/a"]}})
    assert out["metadata"]["finalizers"] == ["x/a", "x/b"]


def test_delete_from_primitive_list() -> None:
    out = smp(BASE, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x/a"]}})
    assert out["metadata"]["finalizers"] == []


def test_patch_delete_removes_a_keyed_item() -> None:
    out = smp(BASE, {"status": {"conditions": [{"type": "A", "$patch": "delete"}]}})
    assert [c["type"] for c in out["status"]["conditions"]] == ["B"]


def test_patch_replace_on_a_list_and_on_a_map() -> None:
    out = smp(BASE, {"status": {"conditions": [cond("Z"), {"$patch": "replace"}]}})
    assert [c["type"] for c in out["status"]["conditions"]] == ["Z"]
    out = smp(BASE, {"metadata": {"labels": {"$patch": "replace", "only": "this"}}})
    assert out["metadata"]["labels"] == {"only": "this"}


def test_patch_delete_on_a_map_removes_it() -> None:
    out = smp(BASE, {"spec": {"devices": {"filter": {"$patch": "delete"}}}})
    assert "filter" not in out["spec"]["devices"]


def test_retain_keys_drops_the_others() -> None:
    out = smp(BASE, {"spec": {"devices": {"$retainKeys": ["priority"], "priority": 3}}})
    assert out["spec"]["devices"] == {"priority": 3}


def test_set_element_order_orders_items_and_is_not_stored() -> None:
    patch = {"status": {"$setElementOrder/conditions": [{"type": "B"}, {"type": "A"}]}}
    out = smp(BASE, patch)
    assert [c["type"] for c in out["status"]["conditions"]] == ["B", "A"]
    assert "$setElementOrder/conditions" not in out["status"]


def test_directives_never_reach_the_stored_object() -> None:
    out = smp(BASE, {"status": {"conditions": [{**cond("N"), "$patch": "merge"}]}})
    assert all(not k.startswith("$") for c in out["status"]["conditions"] for k in c)


def test_claim_reserved_for_merges_on_uid() -> None:
    claim = {"status": {"reservedFor": [{"resource": "pods", "name": "a", "uid": "1"}]}}
    out = smp(
        claim, {"status": {"reservedFor": [{"resource": "pods", "name": "b", "uid": "2"}]}}, CLAIM
    )
    assert [r["uid"] for r in out["status"]["reservedFor"]] == ["1", "2"]


@pytest.mark.parametrize(
    "patch",
    [
        {"spec": {"$patch": "explode"}},
        {"status": {"conditions": [{"status": "True"}]}},
        {"metadata": {"$retainKeys": "name"}},
        {"$patch": "delete"},
    ],
    ids=[
        "unknown-directive",
        "keyed-item-without-key",
        "retain-keys-not-a-list",
        "delete-everything",
    ],
)
def test_malformed_patches_are_400(patch: Any) -> None:
    with pytest.raises(StatusError) as caught:
        smp(BASE, patch)
    assert caught.value.code == 400


def test_not_an_object_is_400() -> None:
    with pytest.raises(StatusError) as caught:
        apply_strategic_merge_patch(BASE, b"[1]", RSP)
    assert caught.value.code == 400


def test_only_single_key_map_lists_merge() -> None:
    conditions = RSP.child("status").child("conditions")
    assert merge_key(conditions) == "type"
    devices = CLAIM.child("status").child("devices")
    assert merge_key(devices) is None  # keyed by driver, pool, device and shareID: replaced

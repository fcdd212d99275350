"""Field ownership and server-side apply over the real kinds' schemas (structured-merge-diff rules)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apiserver.api.resource import ResourcePoolStatusRequest, ResourceSlicePatch
from apiserver.machinery.fieldmanager import (
    ApplyConflictError,
    Conflict,
    FieldManager,
    FieldPath,
    conflict_message,
    decode_fields,
    encode_fields,
    field_set,
    render_path,
    schema_of,
)

RSP_VERSION = "resource.k8s.io/v1alpha3"
RPSR_VERSION = "resource.k8s.io/v1alpha1"
NOW = "2025-01-01T00:00:00Z"
LATER = "2025-01-02T00:00:00Z"


def f(*names: str) -> FieldPath:
    return tuple(("f", n) for n in names)


def k(type_: str) -> tuple[str, str]:
    return ("k", '{"type":"' + type_ + '"}')


def rsp(devices: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": RSP_VERSION,
        "kind": "ResourceSlicePatch",
        "metadata": {"name": "p", **meta},
        "spec": {"devices": devices},
    }


def condition(type_: str, status: str = "True", reason: str = "Done") -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": "",
        "lastTransitionTime": NOW,
    }


def rpsr_status(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": RPSR_VERSION,
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": "r"},
        "status": status,
    }


def owned(obj: dict[str, Any]) -> dict[tuple[str, str, str], set[FieldPath]]:
    """Each managedFields entry's (manager, operation, subresource) and its decoded fields."""
    return {
        (e["manager"], e["operation"], e.get("subresource", "")): decode_fields(e["fieldsV1"])
        for e in obj["metadata"].get("managedFields", [])
    }


@pytest.fixture
def rsp_fields() -> FieldManager:
    return FieldManager(ResourceSlicePatch, RSP_VERSION, has_status=True)


@pytest.fixture
def rpsr_fields() -> FieldManager:
    return FieldManager(ResourcePoolStatusRequest, RPSR_VERSION, has_status=True)


def apply(
    fm: FieldManager,
    live: dict[str, Any] | None,
    config: dict[str, Any],
    manager: str,
    *,
    force: bool = False,
    subresource: str = "",
) -> dict[str, Any]:
    """Apply on copies, as the registry does with a freshly read object."""
    return fm.apply(
        copy.deepcopy(live),
        copy.deepcopy(config),
        manager,
        force=force,
        subresource=subresource,
        now=NOW,
    )


# -- field sets -----------------------------------------------------------------------------

RSP_SCHEMA = schema_of(ResourceSlicePatch)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"metadata": {"labels": {"a": "1"}}}, {f("metadata", "labels", "a")}),
        ({"spec": {"devices": {"priority": 3}}}, {f("spec", "devices", "priority")}),
        (
            # Map entries are owned themselves, and so are their leaves.
            {"spec": {"devices": {"attributes": {"d.io/x": {"string": "s"}}}}},
            {
                f("spec", "devices", "attributes", "d.io/x"),
                f("spec", "devices", "attributes", "d.io/x", "string"),
            },
        ),
        (
            # An empty object is a leaf of its own.
            {"spec": {"devices": {"attributes": {"d.io/x": {"null": {}}}}}},
            {
                f("spec", "devices", "attributes", "d.io/x"),
                f("spec", "devices", "attributes", "d.io/x", "null"),
            },
        ),
        (
            # Atomic lists are one field.
            {"spec": {"devices": {"filter": {"selectors": [{"cel": {"expression": "true"}}]}}}},
            {f("spec", "devices", "filter", "selectors")},
        ),
        (
            # Set lists own each value.
            {"metadata": {"finalizers": ["a.io/x", "b.io/y"]}},
            {
                (*f("metadata", "finalizers"), ("v", '"a.io/x"')),
                (*f("metadata", "finalizers"), ("v", '"b.io/y"')),
            },
        ),
        (
            # Map lists own each item by its key, and the item's fields.
            {"status": {"conditions": [{"type": "A", "status": "True"}]}},
            {
                (*f("status", "conditions"), k("A")),
                (*f("status", "conditions"), k("A"), ("f", "type")),
                (*f("status", "conditions"), k("A"), ("f", "status")),
            },
        ),
    ],
)
def test_field_set(obj: dict[str, Any], expected: set[FieldPath]) -> None:
    assert field_set(obj, RSP_SCHEMA) == expected


def test_encode_fields_uses_the_fields_v1_format() -> None:
    paths = {
        f("metadata", "labels", "app"),
        f("spec", "devices", "attributes", "d.io/x"),
        f("spec", "devices", "attributes", "d.io/x", "int"),
        (*f("status", "conditions"), k("Ready")),
        (*f("status", "conditions"), k("Ready"), ("f", "status")),
        (*f("metadata", "finalizers"), ("v", '"a.io/x"')),
    }
    assert encode_fields(paths) == {
        "f:metadata": {
            "f:labels": {"f:app": {}},
            "f:finalizers": {'v:"a.io/x"': {}},
        },
        "f:spec": {"f:devices": {"f:attributes": {"f:d.io/x": {".": {}, "f:int": {}}}}},
        "f:status": {"f:conditions": {'k:{"type":"Ready"}': {".": {}, "f:status": {}}}},
    }


def test_decode_fields_reads_what_kubernetes_writes() -> None:
    fields_v1 = {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:status": {"f:conditions": {'k:{"type":"Ready"}': {".": {}, "f:reason": {}}}},
    }
    assert decode_fields(fields_v1) == {
        f("metadata", "labels"),
        f("metadata", "labels", "app"),
        (*f("status", "conditions"), k("Ready")),
        (*f("status", "conditions"), k("Ready"), ("f", "reason")),
    }


path_elements = st.one_of(
    st.tuples(st.just("f"), st.sampled_from(["a", "b", "c.io/x", "spec"])),
    st.tuples(st.just("k"), st.sampled_from(['{"type":"A"}', '{"name":"n","uid":"1"}'])),
    st.tuples(st.just("v"), st.sampled_from(['"x"', "1", "true"])),
)
field_paths = st.lists(path_elements, min_size=1, max_size=4).map(tuple)


@given(paths=st.sets(field_paths, max_size=12))
def test_fields_v1_round_trip(paths: set[FieldPath]) -> None:
    assert decode_fields(encode_fields(paths)) == paths


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (f("spec", "devices", "priority"), ".spec.devices.priority"),
        (
            (*f("status", "conditions"), k("A"), ("f", "status")),
            '.status.conditions[type="A"].status',
        ),
        ((*f("metadata", "finalizers"), ("v", '"x"')), '.metadata.finalizers[="x"]'),
    ],
)
def test_render_path(path: FieldPath, text: str) -> None:
    assert render_path(path) == text


# -- server-side apply ------------------------------------------------------------------------


def test_apply_creates_object_and_ownership(rsp_fields: FieldManager) -> None:
    config = rsp({"priority": 1, "attributes": {"d.io/x": {"string": "s"}}}, labels={"a": "1"})
    obj = apply(rsp_fields, None, config, "alice")
    assert obj["spec"] == config["spec"]
    assert obj["metadata"]["labels"] == {"a": "1"}
    [entry] = obj["metadata"]["managedFields"]
    assert entry["manager"] == "alice"
    assert entry["operation"] == "Apply"
    assert entry["apiVersion"] == RSP_VERSION
    assert entry["fieldsType"] == "FieldsV1"
    assert entry["time"] == NOW
    assert "subresource" not in entry
    # Server-set metadata such as the name is never owned.
    assert decode_fields(entry["fieldsV1"]) == {
        f("metadata", "labels", "a"),
        f("spec", "devices", "priority"),
        f("spec", "devices", "attributes", "d.io/x"),
        f("spec", "devices", "attributes", "d.io/x", "string"),
    }


def test_apply_to_main_resource_ignores_status(rsp_fields: FieldManager) -> None:
    config = rsp({"priority": 1})
    config["status"] = {"matchedDevices": 4}
    obj = apply(rsp_fields, None, config, "alice")
    assert "status" not in obj
    assert not any(p[0] == ("f", "status") for p in owned(obj)[("alice", "Apply", "")])


def test_apply_that_drops_a_field_removes_it(rsp_fields: FieldManager) -> None:
    first = rsp(
        {"priority": 1, "attributes": {"d.io/x": {"string": "s"}, "d.io/y": {"int": 2}}},
        labels={"keep": "1", "drop": "1"},
    )
    live = apply(rsp_fields, None, first, "alice")
    second = rsp({"attributes": {"d.io/y": {"int": 2}}}, labels={"keep": "1"})
    obj = apply(rsp_fields, live, second, "alice")
    # The dropped map entry goes as a whole, not just its leaves.
    assert obj["spec"]["devices"] == {"attributes": {"d.io/y": {"int": 2}}}
    assert obj["metadata"]["labels"] == {"keep": "1"}
    assert owned(obj)[("alice", "Apply", "")] == {
        f("metadata", "labels", "keep"),
        f("spec", "devices", "attributes", "d.io/y"),
        f("spec", "devices", "attributes", "d.io/y", "int"),
    }


def test_dropped_field_stays_while_another_manager_owns_it(rsp_fields: FieldManager) -> None:
    live = apply(rsp_fields, None, rsp({"priority": 1}, labels={"a": "1"}), "alice")
    # Bob applies the same value: shared ownership, no conflict.
    live = apply(rsp_fields, live, rsp({"priority": 1}), "bob")
    assert f("spec", "devices", "priority") in owned(live)[("alice", "Apply", "")]
    assert f("spec", "devices", "priority") in owned(live)[("bob", "Apply", "")]
    obj = apply(rsp_fields, live, rsp({}, labels={"a": "1"}), "alice")
    assert obj["spec"]["devices"]["priority"] == 1
    assert f("spec", "devices", "priority") not in owned(obj)[("alice", "Apply", "")]
    # Once Bob drops it too, it goes.
    obj = apply(rsp_fields, obj, rsp({}), "bob")
    assert "priority" not in obj["spec"]["devices"]


def test_apply_of_a_different_value_conflicts(rsp_fields: FieldManager) -> None:
    live = apply(
        rsp_fields, None, rsp({"priority": 1, "attributes": {"d.io/x": {"int": 1}}}), "alice"
    )
    with pytest.raises(ApplyConflictError) as info:
        apply(rsp_fields, live, rsp({"priority": 2, "attributes": {"d.io/x": {"int": 2}}}), "bob")
    conflicts = [(c.manager, c.api_version, render_path(c.path)) for c in info.value.conflicts]
    assert conflicts == [
        ("alice", RSP_VERSION, ".spec.devices.attributes.d.io/x.int"),
        ("alice", RSP_VERSION, ".spec.devices.priority"),
    ]


def test_force_takes_ownership(rsp_fields: FieldManager) -> None:
    live = apply(rsp_fields, None, rsp({"priority": 1}, labels={"a": "1"}), "alice")
    obj = apply(rsp_fields, live, rsp({"priority": 2}), "bob", force=True)
    assert obj["spec"]["devices"]["priority"] == 2
    fields = owned(obj)
    assert f("spec", "devices", "priority") in fields[("bob", "Apply", "")]
    assert f("spec", "devices", "priority") not in fields[("alice", "Apply", "")]
    assert f("metadata", "labels", "a") in fields[("alice", "Apply", "")]
    # Alice lost the field, so her dropping it no longer removes it...
    obj = apply(rsp_fields, obj, rsp({}, labels={"a": "1"}), "alice")
    assert obj["spec"]["devices"]["priority"] == 2
    # ...and applying her old value again is now a conflict with Bob.
    with pytest.raises(ApplyConflictError) as info:
        apply(rsp_fields, obj, rsp({"priority": 1}), "alice")
    assert [c.manager for c in info.value.conflicts] == ["bob"]


def test_reapplying_own_field_with_new_value_is_no_conflict(rsp_fields: FieldManager) -> None:
    live = apply(rsp_fields, None, rsp({"priority": 1}), "alice")
    obj = apply(rsp_fields, live, rsp({"priority": 7}), "alice")
    assert obj["spec"]["devices"]["priority"] == 7
    assert len(obj["metadata"]["managedFields"]) == 1


def test_map_list_items_merge_by_key(rpsr_fields: FieldManager) -> None:
    live = apply(
        rpsr_fields,
        None,
        {
            "apiVersion": RPSR_VERSION,
            "kind": "ResourcePoolStatusRequest",
            "metadata": {"name": "r"},
            "spec": {"driver": "gpu.example.com"},
        },
        "creator",
    )
    live = apply(
        rpsr_fields,
        live,
        rpsr_status(conditions=[condition("Complete")]),
        "controller",
        subresource="status",
    )
    live = apply(
        rpsr_fields,
        live,
        rpsr_status(conditions=[condition("Audited")]),
        "auditor",
        subresource="status",
    )
    assert [c["type"] for c in live["status"]["conditions"]] == ["Complete", "Audited"]
    fields = owned(live)
    assert (*f("status", "conditions"), k("Complete")) in fields[("controller", "Apply", "status")]
    assert (*f("status", "conditions"), k("Audited")) in fields[("auditor", "Apply", "status")]
    assert live["spec"] == {"driver": "gpu.example.com"}

    # Changing one item's field owned by another manager conflicts on that field only.
    with pytest.raises(ApplyConflictError) as info:
        apply(
            rpsr_fields,
            live,
            rpsr_status(conditions=[condition("Complete", status="False")]),
            "auditor",
            subresource="status",
        )
    assert [render_path(c.path) for c in info.value.conflicts] == [
        '.status.conditions[type="Complete"].status'
    ]

    # The controller dropping its item removes that item only.
    obj = apply(rpsr_fields, live, rpsr_status(conditions=[]), "controller", subresource="status")
    assert [c["type"] for c in obj["status"]["conditions"]] == ["Audited"]


def test_status_apply_does_not_touch_spec_or_metadata(rpsr_fields: FieldManager) -> None:
    live = apply(
        rpsr_fields,
        None,
        {
            "apiVersion": RPSR_VERSION,
            "kind": "ResourcePoolStatusRequest",
            "metadata": {"name": "r", "labels": {"a": "1"}},
            "spec": {"driver": "gpu.example.com"},
        },
        "creator",
    )
    config = rpsr_status(truncated=True)
    config["spec"] = {"driver": "other.example.com"}
    config["metadata"]["labels"] = {"a": "2"}
    obj = apply(rpsr_fields, live, config, "controller", subresource="status")
    assert obj["spec"] == {"driver": "gpu.example.com"}
    assert obj["metadata"]["labels"] == {"a": "1"}
    assert obj["status"] == {"truncated": True}
    assert owned(obj)[("controller", "Apply", "status")] == {f("status", "truncated")}


def test_atomic_list_is_replaced_whole(rpsr_fields: FieldManager) -> None:
    pool = {
        "driver": "gpu.example.com",
        "poolName": "p1",
        "totalDevices": 1,
        "allocatedDevices": 0,
        "availableDevices": 1,
        "sliceCount": 1,
        "generation": 1,
    }
    live = apply(
        rpsr_fields,
        None,
        rpsr_status(pools=[pool], validationErrors=["a", "b"]),
        "controller",
        subresource="status",
    )
    other = {**pool, "poolName": "p2"}
    obj = apply(
        rpsr_fields,
        live,
        rpsr_status(pools=[other], validationErrors=["c"]),
        "controller",
        subresource="status",
    )
    assert obj["status"]["pools"] == [other]
    assert obj["status"]["validationErrors"] == ["c"]
    assert owned(obj)[("controller", "Apply", "status")] == {
        f("status", "pools"),
        f("status", "validationErrors"),
    }


def test_set_list_merges_as_a_set(rsp_fields: FieldManager) -> None:
    live = apply(rsp_fields, None, rsp({}, finalizers=["a.io/x"]), "alice")
    live = apply(rsp_fields, live, rsp({}, finalizers=["b.io/y", "a.io/x"]), "bob")
    assert live["metadata"]["finalizers"] == ["a.io/x", "b.io/y"]
    obj = apply(rsp_fields, live, rsp({}), "bob")
    # a.io/x is still Alice's; b.io/y was Bob's alone.
    assert obj["metadata"]["finalizers"] == ["a.io/x"]


# -- updates (create, update, patch) ---------------------------------------------------------


def test_update_records_changed_fields_and_takes_them_from_others(
    rsp_fields: FieldManager,
) -> None:
    live = apply(
        rsp_fields,
        None,
        rsp({"priority": 1, "attributes": {"d.io/x": {"int": 1}}}, labels={"a": "1"}),
        "alice",
    )
    new = copy.deepcopy(live)
    new["spec"]["devices"]["priority"] = 5
    new["metadata"]["labels"]["b"] = "2"
    rsp_fields.update(live, new, "kubectl-edit", now=LATER)
    fields = owned(new)
    assert fields[("kubectl-edit", "Update", "")] == {
        f("spec", "devices", "priority"),
        f("metadata", "labels", "b"),
    }
    assert fields[("alice", "Apply", "")] == {
        f("metadata", "labels", "a"),
        f("spec", "devices", "attributes", "d.io/x"),
        f("spec", "devices", "attributes", "d.io/x", "int"),
    }
    edit = next(e for e in new["metadata"]["managedFields"] if e["manager"] == "kubectl-edit")
    assert edit["time"] == LATER
    # Alice applying her old priority now conflicts with the editor.
    with pytest.raises(ApplyConflictError) as info:
        apply(
            rsp_fields,
            new,
            rsp({"priority": 1, "attributes": {"d.io/x": {"int": 1}}}, labels={"a": "1"}),
            "alice",
        )
    assert [(c.manager, render_path(c.path)) for c in info.value.conflicts] == [
        ("kubectl-edit", ".spec.devices.priority")
    ]


def test_update_on_create_owns_every_field(rsp_fields: FieldManager) -> None:
    obj = rsp({"priority": 1}, labels={"a": "1"})
    rsp_fields.update(None, obj, "kubectl-create", now=NOW)
    assert owned(obj) == {
        ("kubectl-create", "Update", ""): {
            f("metadata", "labels", "a"),
            f("spec", "devices", "priority"),
        }
    }


def test_update_without_change_records_nothing(rsp_fields: FieldManager) -> None:
    live = apply(rsp_fields, None, rsp({"priority": 1}), "alice")
    new = copy.deepcopy(live)
    rsp_fields.update(live, new, "other", now=LATER)
    assert list(owned(new)) == [("alice", "Apply", "")]


def test_update_drops_ownership_of_removed_fields(rsp_fields: FieldManager) -> None:
    live = apply(rsp_fields, None, rsp({"priority": 1}, labels={"a": "1"}), "alice")
    new = copy.deepcopy(live)
    del new["metadata"]["labels"]
    rsp_fields.update(live, new, "editor", now=LATER)
    assert owned(new) == {("alice", "Apply", ""): {f("spec", "devices", "priority")}}


def test_update_of_status_is_recorded_for_the_status_subresource(
    rsp_fields: FieldManager,
) -> None:
    live = apply(rsp_fields, None, rsp({"priority": 1}), "alice")
    new = copy.deepcopy(live)
    new["status"] = {"matchedDevices": 3, "observedGeneration": 1}
    rsp_fields.update(live, new, "controller", subresource="status", now=LATER)
    fields = owned(new)
    assert fields[("controller", "Update", "status")] == {
        f("status", "matchedDevices"),
        f("status", "observedGeneration"),
    }
    assert fields[("alice", "Apply", "")] == {f("spec", "devices", "priority")}
    entry = next(e for e in new["metadata"]["managedFields"] if e["manager"] == "controller")
    assert entry["subresource"] == "status"


def test_dropped_entry_stays_while_another_manager_owns_a_field_in_it(
    rsp_fields: FieldManager,
) -> None:
    live = apply(
        rsp_fields,
        None,
        rsp({"attributes": {"d.io/x": {"string": "a"}}}, labels={"l": "1"}),
        "alice",
    )
    edited = copy.deepcopy(live)
    edited["spec"]["devices"]["attributes"]["d.io/x"]["string"] = "b"
    rsp_fields.update(live, edited, "bob", now=LATER)
    obj = apply(rsp_fields, edited, rsp({}, labels={"l": "1"}), "alice")
    assert obj["spec"]["devices"]["attributes"] == {"d.io/x": {"string": "b"}}


def test_dropped_list_item_keeps_its_key_and_fields_others_own(
    rsp_fields: FieldManager,
) -> None:
    status = {**rsp({}), "status": {"conditions": [condition("A")]}}
    live = apply(rsp_fields, None, status, "alice", subresource="status")
    edited = copy.deepcopy(live)
    edited["status"]["conditions"][0]["message"] = "seen"
    rsp_fields.update(live, edited, "bob", subresource="status", now=LATER)
    assert owned(edited)[("bob", "Update", "status")] == {
        (*f("status", "conditions"), k("A"), ("f", "message"))
    }
    dropped = {**rsp({}), "status": {"conditions": []}}
    obj = apply(rsp_fields, edited, dropped, "alice", subresource="status")
    assert obj["status"]["conditions"] == [{"type": "A", "message": "seen"}]


# -- conflict messages ---------------------------------------------------------------------


def _conflict(manager: str, *path: str, operation: str = "Apply", time: str = "") -> Conflict:
    return Conflict(
        manager, "resource.k8s.io/v1alpha3", tuple(("f", p) for p in path), operation, "", time
    )


def test_one_conflict_is_one_line_as_in_kubernetes() -> None:
    assert conflict_message([_conflict("alice", "spec", "x")]) == (
        'Apply failed with 1 conflict: conflict with "alice" using resource.k8s.io/v1alpha3:'
        " .spec.x"
    )


def test_several_conflicts_are_grouped_by_owner_as_in_kubernetes() -> None:
    conflicts = [
        _conflict("bob", "spec", "z", operation="Update", time="2026-01-02T03:04:05Z"),
        _conflict("alice", "spec", "x"),
        _conflict("alice", "spec", "y"),
    ]
    assert conflict_message(conflicts) == (
        "Apply failed with 3 conflicts: "
        'conflicts with "alice" using resource.k8s.io/v1alpha3:\n'
        "- .spec.x\n"
        "- .spec.y\n"
        'conflicts with "bob" using resource.k8s.io/v1alpha3 at 2026-01-02T03:04:05Z:\n'
        "- .spec.z"
    )


def test_a_subresource_owner_is_named_with_it() -> None:
    owner = Conflict("ctl", "v1", (("f", "status"),), "Update", "status", "").owner()
    assert owner == '"ctl" with subresource "status" using v1'

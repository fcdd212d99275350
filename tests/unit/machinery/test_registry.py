"""The generic registry over a real SQLite store: Kubernetes object semantics, in-process."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from apiserver.kinds.resourcepoolstatusrequest import ResourcePoolStatusRequestStrategy
from apiserver.kinds.resourceslicepatch import ResourceSlicePatchStrategy
from apiserver.machinery import (
    JSON_PATCH,
    DeleteOptions,
    ListOptions,
    Registry,
    StatusSubresource,
    WriteOptions,
    parse_field_selector,
    parse_label_selector,
)
from apiserver.machinery.decoding import FieldValidation
from apiserver.machinery.errors import StatusError
from apiserver.storage import EventType, StorageUnavailableError, StoredObject
from apiserver.storage.sqlite import SQLiteStore
from apiserver.toolkit import MERGE_PATCH
from tests.unit.builders import rsp_body

GROUP = "resource.k8s.io"
RSP_API = f"{GROUP}/v1alpha3"
RPSR_API = f"{GROUP}/v1alpha1"
OPTS = WriteOptions()
HANG = 30.0


@pytest.fixture
def rsp(store: SQLiteStore) -> Registry:
    return Registry(ResourceSlicePatchStrategy.for_group(GROUP), store)


@pytest.fixture
def rpsr(store: SQLiteStore) -> Registry:
    return Registry(ResourcePoolStatusRequestStrategy.for_group(GROUP), store)


async def create(reg: Registry, name: str, priority: int = 1, **meta: Any) -> dict[str, Any]:
    result = await reg.create(
        None, rsp_body(name, priority, **meta), replace(OPTS, user_agent="test/1")
    )
    return result.obj.copy()


async def stored(reg: Registry, name: str) -> dict[str, Any]:
    return (await reg.get(None, name)).copy()


async def status_error(call: Awaitable[Any]) -> StatusError:
    with pytest.raises(StatusError) as info:
        await call
    return info.value


# -- create and get ------------------------------------------------------------------------------


async def test_create_sets_server_metadata(rsp: Registry, store: SQLiteStore) -> None:
    body = rsp_body("p", uid="client-uid", resourceVersion="99", generation=7)
    body["metadata"]["deletionTimestamp"] = "2020-01-01T00:00:00Z"
    body["status"] = {"matchedDevices": 3}
    result = await rsp.create(None, body, replace(OPTS, user_agent="kubectl/v1.33.0 (linux)"))
    assert result.code == 201
    obj = result.obj.copy()
    meta = obj["metadata"]
    assert meta["uid"] != "client-uid"
    assert meta["resourceVersion"] == str(result.obj.revision) == str(store.revision)
    assert meta["generation"] == 1
    assert meta["creationTimestamp"].endswith("Z")
    assert "deletionTimestamp" not in meta
    assert "status" not in obj
    [entry] = meta["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl", "Update")
    assert await stored(rsp, "p") == obj


async def test_create_with_generate_name(rsp: Registry) -> None:
    body = rsp_body("")
    body["metadata"] = {"generateName": "patch-"}
    obj = (await rsp.create(None, body, OPTS)).obj.obj
    name = obj["metadata"]["name"]
    assert name.startswith("patch-")
    assert len(name) == len("patch-") + 5


async def test_create_existing_is_409_already_exists(rsp: Registry) -> None:
    first = await create(rsp, "p", 1)
    err = await status_error(rsp.create(None, rsp_body("p", 2), OPTS))
    assert (err.code, err.reason) == (409, "AlreadyExists")
    assert await stored(rsp, "p") == first


async def test_get_missing_is_404(rsp: Registry) -> None:
    err = await status_error(rsp.get(None, "missing"))
    assert (err.code, err.reason) == (404, "NotFound")
    assert err.message == 'resourceslicepatches.resource.k8s.io "missing" not found'


async def test_invalid_object_is_422_with_every_field_and_nothing_stored(
    rsp: Registry, store: SQLiteStore
) -> None:
    body = rsp_body("p", 2**40)
    body["spec"]["devices"]["attributes"] = {"x": {"int": 1}, "d.io/y": {}}
    before = store.revision
    err = await status_error(rsp.create(None, body, OPTS))
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.details is not None
    assert err.details["kind"] == "ResourceSlicePatch"
    assert [c["field"] for c in err.details["causes"]] == [
        "spec.devices.priority",
        "spec.devices.attributes[x]",
        "spec.devices.attributes[d.io/y]",
    ]
    assert store.revision == before
    assert (await status_error(rsp.get(None, "p"))).code == 404


async def test_invalid_metadata_is_422_naming_each_field(rsp: Registry) -> None:
    body = rsp_body("Bad_Name", labels={"k": "-v"}, finalizers=["bad finalizer"])
    err = await status_error(rsp.create(None, body, OPTS))
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.details is not None
    assert [c["field"] for c in err.details["causes"]] == [
        "metadata.name",
        "metadata.labels[k]",
        "metadata.finalizers[0]",
    ]


async def test_wrong_kind_or_version_is_400(rsp: Registry) -> None:
    body = rsp_body("p")
    body["kind"] = "ResourceSlice"
    assert (await status_error(rsp.create(None, body, OPTS))).code == 400
    body = rsp_body("p")
    body["apiVersion"] = f"{GROUP}/v1"
    assert (await status_error(rsp.create(None, body, OPTS))).code == 400


@pytest.mark.parametrize(
    ("validation", "warnings", "error"),
    [
        (FieldValidation.STRICT, None, 400),
        (FieldValidation.WARN, ['unknown field "spec.devices.bogus"'], None),
        (FieldValidation.IGNORE, [], None),
    ],
)
async def test_unknown_fields_per_field_validation(
    rsp: Registry,
    validation: FieldValidation,
    warnings: list[str] | None,
    error: int | None,
) -> None:
    body = rsp_body("p")
    body["spec"]["devices"]["bogus"] = 1
    call = rsp.create(None, body, WriteOptions(field_validation=validation))
    if error is not None:
        err = await status_error(call)
        assert err.code == error
        assert 'unknown field "spec.devices.bogus"' in err.message
        assert (await status_error(rsp.get(None, "p"))).code == 404
        return
    result = await call
    assert result.warnings == warnings
    assert "bogus" not in (await stored(rsp, "p"))["spec"]["devices"]


# -- generation ---------------------------------------------------------------------------------


async def test_generation_bumps_only_on_spec_change(rsp: Registry) -> None:
    obj = await create(rsp, "p", 1)
    assert obj["metadata"]["generation"] == 1

    obj["metadata"]["labels"] = {"a": "b"}
    obj["metadata"]["annotations"] = {"note": "x"}
    obj = (await rsp.update(None, "p", obj, OPTS)).obj.copy()
    assert obj["metadata"]["generation"] == 1
    assert obj["metadata"]["labels"] == {"a": "b"}

    obj["status"] = {"matchedDevices": 3}
    obj = (await StatusSubresource(rsp).update(None, "p", obj, OPTS)).obj.copy()
    assert obj["metadata"]["generation"] == 1
    assert obj["status"] == {"matchedDevices": 3}

    obj["spec"]["devices"]["priority"] = 2
    obj = (await rsp.update(None, "p", obj, OPTS)).obj.copy()
    assert obj["metadata"]["generation"] == 2

    patched = await rsp.patch(
        None, "p", b'{"spec": {"devices": {"priority": 3}}}', MERGE_PATCH, OPTS
    )
    assert patched.obj.obj["metadata"]["generation"] == 3
    patched = await rsp.patch(None, "p", b'{"metadata": {"labels": {"c": "d"}}}', MERGE_PATCH, OPTS)
    assert patched.obj.obj["metadata"]["generation"] == 3


async def test_clients_cannot_set_generation(rsp: Registry) -> None:
    obj = await create(rsp, "p")
    obj["metadata"]["generation"] = 42
    updated = (await rsp.update(None, "p", obj, OPTS)).obj.obj
    assert updated["metadata"]["generation"] == 1


async def test_noop_update_writes_nothing(rsp: Registry, store: SQLiteStore) -> None:
    obj = await create(rsp, "p")
    before = store.revision
    result = await rsp.update(None, "p", copy.deepcopy(obj), OPTS)
    assert result.obj.revision == before
    assert store.revision == before


# -- status subresource ---------------------------------------------------------------------------


async def test_status_write_changes_only_status(rsp: Registry) -> None:
    obj = await create(rsp, "p", 1, labels={"a": "1"})
    sent = copy.deepcopy(obj)
    sent["spec"]["devices"]["priority"] = 9
    sent["metadata"]["labels"] = {"a": "2"}
    sent["metadata"]["annotations"] = {"x": "y"}
    sent["status"] = {"matchedDevices": 5, "observedGeneration": 1}
    result = (await StatusSubresource(rsp).update(None, "p", sent, OPTS)).obj.copy()
    assert result["spec"] == obj["spec"]
    assert result["metadata"]["labels"] == {"a": "1"}
    assert "annotations" not in result["metadata"]
    assert result["status"] == {"matchedDevices": 5, "observedGeneration": 1}
    assert await stored(rsp, "p") == result


async def test_main_resource_write_never_changes_status(rsp: Registry) -> None:
    obj = await create(rsp, "p")
    obj["status"] = {"matchedDevices": 5}
    obj = (await StatusSubresource(rsp).update(None, "p", obj, OPTS)).obj.copy()
    sent = copy.deepcopy(obj)
    sent["status"] = {"matchedDevices": 99}
    sent["spec"]["devices"]["priority"] = 2
    result = (await rsp.update(None, "p", sent, OPTS)).obj.copy()
    assert result["status"] == {"matchedDevices": 5}
    assert result["spec"]["devices"]["priority"] == 2
    patched = await rsp.patch(None, "p", b'{"status": null}', MERGE_PATCH, OPTS)
    assert patched.obj.obj["status"] == {"matchedDevices": 5}


async def test_status_patch_and_status_validation(rsp: Registry) -> None:
    await create(rsp, "p")
    patched = await StatusSubresource(rsp).patch(
        None, "p", b'{"status": {"matchedDevices": 2}}', MERGE_PATCH, OPTS
    )
    assert patched.obj.obj["status"] == {"matchedDevices": 2}
    err = await status_error(
        StatusSubresource(rsp).patch(
            None,
            "p",
            b'{"status": {"matchedDevices": -1}}',
            MERGE_PATCH,
            OPTS,
        )
    )
    assert err.code == 422
    assert err.details is not None
    assert [c["field"] for c in err.details["causes"]] == ["status.matchedDevices"]
    assert (await stored(rsp, "p"))["status"] == {"matchedDevices": 2}


# -- optimistic concurrency -------------------------------------------------------------------------


async def test_stale_resource_version_is_409_and_nothing_changes(rsp: Registry) -> None:
    obj = await create(rsp, "p", 1)
    stale = copy.deepcopy(obj)
    obj["spec"]["devices"]["priority"] = 2
    current = (await rsp.update(None, "p", obj, OPTS)).obj.copy()
    stale["spec"]["devices"]["priority"] = 3
    err = await status_error(rsp.update(None, "p", stale, OPTS))
    assert (err.code, err.reason) == (409, "Conflict")
    assert "the object has been modified" in err.message
    assert await stored(rsp, "p") == current


async def test_update_without_resource_version_is_422(rsp: Registry) -> None:
    obj = await create(rsp, "p")
    del obj["metadata"]["resourceVersion"]
    err = await status_error(rsp.update(None, "p", obj, OPTS))
    assert err.code == 422
    assert err.details is not None
    assert [c["field"] for c in err.details["causes"]] == ["metadata.resourceVersion"]


async def test_update_of_missing_object_is_404(rsp: Registry) -> None:
    body = rsp_body("ghost")
    body["metadata"]["resourceVersion"] = "1"
    assert (await status_error(rsp.update(None, "ghost", body, OPTS))).code == 404
    assert (await status_error(rsp.patch(None, "ghost", b"{}", MERGE_PATCH, OPTS))).code == 404


async def test_name_in_body_must_match_the_url(rsp: Registry) -> None:
    obj = await create(rsp, "p")
    obj["metadata"]["name"] = "other"
    assert (await status_error(rsp.update(None, "p", obj, OPTS))).code == 400


async def test_patch_with_stale_resource_version_is_409(rsp: Registry) -> None:
    obj = await create(rsp, "p")
    await rsp.patch(None, "p", b'{"spec": {"devices": {"priority": 2}}}', MERGE_PATCH, OPTS)
    body = orjson.dumps({"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]}})
    err = await status_error(rsp.patch(None, "p", body, MERGE_PATCH, OPTS))
    assert err.code == 409


async def test_failing_json_patch_test_is_422_and_changes_nothing(rsp: Registry) -> None:
    obj = await create(rsp, "p", 1)
    body = (
        b'[{"op":"test","path":"/spec/devices/priority","value":5},{"op":"remove","path":"/spec"}]'
    )
    err = await status_error(rsp.patch(None, "p", body, JSON_PATCH, OPTS))
    assert (err.code, err.reason) == (422, "Invalid")
    assert await stored(rsp, "p") == obj


# -- finalizers and deletion ---------------------------------------------------------------------------


async def test_delete_without_finalizers_removes(rsp: Registry) -> None:
    await create(rsp, "p")
    result = await rsp.delete(None, "p", DeleteOptions())
    assert result.deleted is True
    assert (await status_error(rsp.get(None, "p"))).code == 404
    assert (await status_error(rsp.delete(None, "p", DeleteOptions()))).code == 404


async def test_finalizers_hold_deletion_until_the_last_is_removed(
    rsp: Registry, store: SQLiteStore
) -> None:
    await create(rsp, "p", finalizers=["example.com/a", "example.com/b"])
    result = await rsp.delete(None, "p", DeleteOptions())
    assert result.deleted is False
    marked = await stored(rsp, "p")
    assert marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 0
    assert marked["metadata"]["generation"] == 2

    # Deleting again changes nothing.
    again = await rsp.delete(None, "p", DeleteOptions())
    assert again.obj.revision == int(marked["metadata"]["resourceVersion"])

    # No new finalizers while deleting.
    adding = copy.deepcopy(marked)
    adding["metadata"]["finalizers"].append("example.com/c")
    err = await status_error(rsp.update(None, "p", adding, OPTS))
    assert err.code == 422
    assert err.details is not None
    assert [c["field"] for c in err.details["causes"]] == ["metadata.finalizers"]

    # The deletion timestamp cannot be cleared by an update.
    clearing = copy.deepcopy(marked)
    del clearing["metadata"]["deletionTimestamp"]
    clearing["metadata"]["labels"] = {"x": "y"}
    kept = (await rsp.update(None, "p", clearing, OPTS)).obj.copy()
    assert kept["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]

    kept["metadata"]["finalizers"] = ["example.com/b"]
    one_left = (await rsp.update(None, "p", kept, OPTS)).obj.copy()
    assert (await stored(rsp, "p"))["metadata"]["finalizers"] == ["example.com/b"]

    watch = store.watch(rsp.resource.key_prefix(), store.revision)
    events = aiter(watch)
    try:
        one_left["metadata"]["finalizers"] = []
        await rsp.update(None, "p", one_left, OPTS)
        assert (await status_error(rsp.get(None, "p"))).code == 404
        first = await asyncio.wait_for(anext(events), HANG)
        second = await asyncio.wait_for(anext(events), HANG)
        assert (first.type, second.type) == (EventType.MODIFIED, EventType.DELETED)
    finally:
        await watch.close()


class _RemovalFails(SQLiteStore):
    """A store whose deletes fail, as etcd's do when it is unreachable."""

    async def delete(self, key: str, *, expected_revision: int | None) -> StoredObject:
        raise StorageUnavailableError("etcd is unreachable")


async def test_removing_the_last_finalizer_is_answered_even_if_the_removal_fails(
    tmp_path: Path,
) -> None:
    """The update is stored, so it is answered (not a 503 whose retry would conflict);
    the object, without finalizers, goes with the next write or delete."""
    store = _RemovalFails(tmp_path / "store.db")
    await store.start()
    try:
        reg = Registry(ResourceSlicePatchStrategy.for_group(GROUP), store)
        await create(reg, "p", finalizers=["example.com/a"])
        await reg.delete(None, "p", DeleteOptions())  # marks it: finalizers hold it
        marked = await stored(reg, "p")
        marked["metadata"]["finalizers"] = []
        result = await reg.update(None, "p", marked, OPTS)
        assert result.code == 200
        kept = await stored(reg, "p")
        assert kept["metadata"]["resourceVersion"] == str(result.obj.revision)
        assert "finalizers" not in kept["metadata"] or not kept["metadata"]["finalizers"]
        assert kept["metadata"]["deletionTimestamp"]
    finally:
        await store.close()


async def test_delete_preconditions(rsp: Registry) -> None:
    obj = await create(rsp, "p")
    err = await status_error(rsp.delete(None, "p", DeleteOptions(precondition_uid="nope")))
    assert err.code == 409
    err = await status_error(
        rsp.delete(None, "p", DeleteOptions(precondition_resource_version="1"))
    )
    assert err.code == 409
    assert await stored(rsp, "p") == obj
    meta = obj["metadata"]
    opts = DeleteOptions(
        precondition_uid=meta["uid"], precondition_resource_version=meta["resourceVersion"]
    )
    assert (await rsp.delete(None, "p", opts)).deleted


# -- dry run ---------------------------------------------------------------------------------


async def test_dry_run_never_stores(rsp: Registry, store: SQLiteStore) -> None:
    dry = WriteOptions(dry_run=True)
    result = await rsp.create(None, rsp_body("new"), dry)
    assert result.code == 201
    assert result.obj.obj["metadata"]["name"] == "new"
    assert (await status_error(rsp.get(None, "new"))).code == 404

    obj = await create(rsp, "p", 1, finalizers=["example.com/f"])
    before = store.revision
    obj["spec"]["devices"]["priority"] = 5
    updated = await rsp.update(None, "p", copy.deepcopy(obj), dry)
    assert updated.obj.obj["spec"]["devices"]["priority"] == 5
    await rsp.patch(None, "p", b'{"metadata": {"labels": {"a": "b"}}}', MERGE_PATCH, dry)
    await StatusSubresource(rsp).update(
        None,
        "p",
        {**copy.deepcopy(obj), "status": {"matchedDevices": 1}},
        dry,
    )
    deleting = await rsp.delete(None, "p", DeleteOptions(dry_run=True))
    assert deleting.obj.obj["metadata"]["deletionTimestamp"]
    apply_config = {**rsp_body("p", 7), "metadata": {"name": "p"}}
    await rsp.apply(
        None, "p", apply_config, WriteOptions(dry_run=True, field_manager="m", force=True)
    )
    assert store.revision == before
    current = await stored(rsp, "p")
    assert current["spec"]["devices"]["priority"] == 1
    assert "deletionTimestamp" not in current["metadata"]

    await rsp.update(
        None, "p", {**current, "metadata": {**current["metadata"], "finalizers": []}}, OPTS
    )
    after = store.revision
    assert (await rsp.delete(None, "p", DeleteOptions(dry_run=True))).deleted
    assert store.revision == after
    await rsp.get(None, "p")


async def test_dry_run_create_of_existing_name_is_409(rsp: Registry) -> None:
    await create(rsp, "p")
    err = await status_error(rsp.create(None, rsp_body("p"), WriteOptions(dry_run=True)))
    assert err.code == 409


# -- apply -------------------------------------------------------------------------------------


async def test_apply_creates_then_conflicts_then_forces(rsp: Registry) -> None:
    config = rsp_body("p", 1)
    created = await rsp.apply(None, "p", config, WriteOptions(field_manager="alice"))
    assert created.code == 201
    other = rsp_body("p", 2)
    err = await status_error(rsp.apply(None, "p", other, WriteOptions(field_manager="bob")))
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == (
        f'Apply failed with 1 conflict: conflict with "alice" using {RSP_API}:'
        " .spec.devices.priority"
    )
    assert err.details is not None
    assert err.details["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": f'conflict with "alice" using {RSP_API}',
            "field": ".spec.devices.priority",
        }
    ]
    forced = await rsp.apply(None, "p", other, WriteOptions(field_manager="bob", force=True))
    assert forced.obj.obj["spec"]["devices"]["priority"] == 2
    assert forced.obj.obj["metadata"]["generation"] == 2


def _tainted(name: str, value: str = "true") -> dict[str, Any]:
    body = rsp_body(name)
    body["spec"]["devices"]["taints"] = [
        {"key": "example.com/unhealthy", "value": value, "effect": "NoSchedule"}
    ]
    body["spec"]["devices"]["capacity"] = {"example.com/memory": {"value": "1024Mi"}}
    return body


async def test_apply_after_a_client_side_apply_is_no_conflict_on_what_the_server_set(
    rsp: Registry,
) -> None:
    """kubectl apply, then kubectl apply --server-side of the same manifest: the server-set
    ``timeAdded`` of the (atomic) taints and a quantity written in another form are not the
    applier's change, so there is no conflict; a real change still is one."""
    created = await rsp.create(None, _tainted("p"), WriteOptions(field_manager="client-side"))
    [taint] = created.obj.obj["spec"]["devices"]["taints"]
    assert taint["timeAdded"]
    again = _tainted("p")
    again["spec"]["devices"]["capacity"]["example.com/memory"]["value"] = "1Gi"
    applied = await rsp.apply(None, "p", again, WriteOptions(field_manager="kubectl"))
    assert applied.obj.obj["spec"]["devices"]["taints"] == [taint]
    assert applied.obj.obj["metadata"]["generation"] == 1
    changed = _tainted("p", value="false")
    err = await status_error(rsp.apply(None, "p", changed, WriteOptions(field_manager="other")))
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.details is not None
    # Both co-owners of the taints conflict with the change.
    assert [(c["field"], c["message"].split('"')[1]) for c in err.details["causes"]] == [
        (".spec.devices.taints", "client-side"),
        (".spec.devices.taints", "kubectl"),
    ]


async def test_apply_requires_a_field_manager(rsp: Registry) -> None:
    err = await status_error(rsp.apply(None, "p", rsp_body("p"), OPTS))
    assert err.code == 422


# -- lists -------------------------------------------------------------------------------------


async def list_all(
    reg: Registry,
    opts: ListOptions,
    between_pages: Callable[[], Awaitable[None]] | None = None,
) -> tuple[list[dict[str, Any]], list[int]]:
    """Every page of a list, following continue tokens; the objects and each page's revision."""
    objects: list[dict[str, Any]] = []
    revisions: list[int] = []
    token = ""
    for _ in range(100):
        page = await reg.list(
            None,
            ListOptions(opts.label_selector, opts.field_selector, opts.limit, token),
        )
        assert len(page.items) <= opts.limit
        objects += [i.obj for i in page.items]
        revisions.append(page.revision)
        token = page.continue_token
        if not token:
            return objects, revisions
        if between_pages is not None:
            await between_pages()
    raise AssertionError("the list never ended")


def names(objects: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objects]


async def test_paginated_list_is_one_snapshot(rsp: Registry) -> None:
    created = [f"p{i:02d}" for i in range(10)]
    for name in created:
        await create(rsp, name, 1)
    calls = 0

    async def churn() -> None:
        nonlocal calls
        await create(rsp, f"p{calls + 5:02d}x")  # sorts into the pages still to come
        await create(rsp, f"a{calls:02d}")  # sorts before everything
        await rsp.delete(None, f"p{9 - calls:02d}", DeleteOptions())  # still in the snapshot
        if calls == 0:
            await rsp.patch(None, "p06", b'{"spec":{"devices":{"priority":9}}}', MERGE_PATCH, OPTS)
        calls += 1

    listed, revisions = await list_all(rsp, ListOptions(limit=3), churn)
    assert calls == 3
    assert names(listed) == created
    assert len(set(revisions)) == 1
    p06 = next(o for o in listed if o["metadata"]["name"] == "p06")
    assert p06["spec"]["devices"]["priority"] == 1
    assert int(p06["metadata"]["resourceVersion"]) <= revisions[0]

    after, _ = await list_all(rsp, ListOptions(limit=4))
    assert names(after) == sorted(
        [f"a{i:02d}" for i in range(3)] + [f"p{i:02d}" for i in range(7)] + ["p05x", "p06x", "p07x"]
    )


async def test_list_selectors_with_pagination(rsp: Registry) -> None:
    for i in range(20):
        labels = {"parity": "even" if i % 2 == 0 else "odd", "n": str(i)}
        await create(rsp, f"p{i:02d}", labels=labels)
    getters = rsp.field_getters
    cases = [
        ("parity=even", "", [f"p{i:02d}" for i in range(0, 20, 2)]),
        ("parity=odd,n<7", "", ["p01", "p03", "p05"]),
        ("parity notin (odd),n>15", "", ["p16", "p18"]),
        ("", "metadata.name!=p00", [f"p{i:02d}" for i in range(1, 20)]),
        ("parity=even", "metadata.name=p04", ["p04"]),
        ("parity=odd", "metadata.name=p04", []),
        ("missing", "", []),
    ]
    for labels, fields, expected in cases:
        opts = ListOptions(
            parse_label_selector(labels), parse_field_selector(fields, getters), limit=3
        )
        listed, _ = await list_all(rsp, opts)
        assert names(listed) == expected, (labels, fields)
        unpaged = await rsp.list(None, ListOptions(opts.label_selector, opts.field_selector))
        assert [i.obj["metadata"]["name"] for i in unpaged.items] == expected


async def test_list_pinned_to_a_name(rsp: Registry, store: SQLiteStore) -> None:
    await create(rsp, "p")
    await create(rsp, "p2")
    getters = rsp.field_getters
    one = await rsp.list(
        None, ListOptions(field_selector=parse_field_selector("metadata.name=p", getters))
    )
    assert [i.obj["metadata"]["name"] for i in one.items] == ["p"]
    assert one.revision == store.revision
    none = await rsp.list(
        None, ListOptions(field_selector=parse_field_selector("metadata.name=p1", getters))
    )
    assert none.items == []


async def test_list_at_exact_resource_version(rsp: Registry) -> None:
    first = await create(rsp, "a", 1)
    at = first["metadata"]["resourceVersion"]
    first["spec"]["devices"]["priority"] = 2
    await rsp.update(None, "a", first, OPTS)
    await create(rsp, "b")
    old = await rsp.list(None, ListOptions(resource_version=at, resource_version_match="Exact"))
    assert [
        (i.obj["metadata"]["name"], i.obj["spec"]["devices"]["priority"]) for i in old.items
    ] == [("a", 1)]
    assert old.revision == int(at)
    latest = await rsp.list(None, ListOptions(resource_version=at))
    assert len(latest.items) == 2
    err = await status_error(rsp.list(None, ListOptions(resource_version="999999")))
    assert err.code == 504
    err = await status_error(rsp.list(None, ListOptions(resource_version="abc")))
    assert err.code == 400


async def test_bad_or_foreign_continue_token_is_400(rsp: Registry, rpsr: Registry) -> None:
    for i in range(3):
        await create(rsp, f"p{i}")
    page = await rsp.list(None, ListOptions(limit=1))
    assert page.continue_token
    assert (await status_error(rsp.list(None, ListOptions(continue_token="garbage")))).code == 400
    err = await status_error(rpsr.list(None, ListOptions(continue_token=page.continue_token)))
    assert err.code == 400


async def test_continue_token_after_compaction_is_410(rsp: Registry, store: SQLiteStore) -> None:
    for i in range(3):
        await create(rsp, f"p{i}")
    page = await rsp.list(None, ListOptions(limit=1))
    await create(rsp, "later")
    await store.compact(store.revision)
    err = await status_error(
        rsp.list(None, ListOptions(limit=1, continue_token=page.continue_token))
    )
    assert (err.code, err.reason) == (410, "Expired")


async def test_delete_collection_honours_selectors(rsp: Registry) -> None:
    await create(rsp, "a", labels={"x": "1"})
    await create(rsp, "b", labels={"x": "2"})
    await create(rsp, "c", labels={"x": "1"}, finalizers=["example.com/f"])
    deleted = await rsp.delete_collection(
        None, ListOptions(label_selector=parse_label_selector("x=1")), DeleteOptions()
    )
    assert sorted(d.obj["metadata"]["name"] for d in deleted.items) == ["a", "c"]
    remaining = await rsp.list(None, ListOptions())
    assert [i.obj["metadata"]["name"] for i in remaining.items] == ["b", "c"]
    assert remaining.items[1].obj["metadata"]["deletionTimestamp"]


# -- ResourcePoolStatusRequest ------------------------------------------------------------------


def rpsr_body(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": RPSR_API,
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": {"driver": "gpu.example.com", **spec},
    }


async def test_rpsr_defaults_limit_and_keeps_spec_immutable(rpsr: Registry) -> None:
    created = (await rpsr.create(None, rpsr_body("r"), OPTS)).obj.copy()
    assert created["spec"]["limit"] == 100
    explicit = (await rpsr.create(None, rpsr_body("r2", limit=7), OPTS)).obj.copy()
    assert explicit["spec"]["limit"] == 7

    changed = copy.deepcopy(created)
    changed["spec"]["limit"] = 5
    err = await status_error(rpsr.update(None, "r", changed, OPTS))
    assert err.code == 422
    assert err.details is not None
    assert [c["field"] for c in err.details["causes"]] == ["spec"]
    err = await status_error(
        rpsr.patch(None, "r", b'{"spec": {"poolName": "p"}}', MERGE_PATCH, OPTS)
    )
    assert err.code == 422

    labelled = copy.deepcopy(created)
    labelled["metadata"]["labels"] = {"a": "b"}
    assert (await rpsr.update(None, "r", labelled, OPTS)).obj.obj["metadata"]["labels"] == {
        "a": "b"
    }


@pytest.mark.parametrize(("limit", "ok"), [(0, False), (1, True), (1000, True), (1001, False)])
async def test_rpsr_limit_bounds(rpsr: Registry, limit: int, ok: bool) -> None:
    call = rpsr.create(None, rpsr_body("r", limit=limit), OPTS)
    if ok:
        assert (await call).obj.obj["spec"]["limit"] == limit
    else:
        err = await status_error(call)
        assert err.code == 422
        assert err.details is not None
        assert [c["field"] for c in err.details["causes"]] == ["spec.limit"]


async def test_rpsr_status_written_through_status_subresource(rpsr: Registry) -> None:
    created = (await rpsr.create(None, rpsr_body("r"), OPTS)).obj.copy()
    created["status"] = {
        "observationTime": "2025-01-01T00:00:00Z",
        "validationErrors": ["x" * 257],
    }
    err = await status_error(StatusSubresource(rpsr).update(None, "r", created, OPTS))
    assert err.code == 422
    created["status"]["validationErrors"] = ["pool p is incomplete"]
    written = (await StatusSubresource(rpsr).update(None, "r", created, OPTS)).obj.obj
    assert written["status"]["validationErrors"] == ["pool p is incomplete"]
    assert written["metadata"]["generation"] == 1


async def test_apply_to_status_of_missing_object_is_404(rsp: Registry) -> None:
    config = {**rsp_body("p"), "status": {"matchedDevices": 1}}
    err = await status_error(
        StatusSubresource(rsp).apply(None, "p", config, WriteOptions(field_manager="controller"))
    )
    assert err.code == 404
    assert (await status_error(rsp.get(None, "p"))).code == 404


async def test_apply_to_status_changes_only_status(rsp: Registry) -> None:
    await create(rsp, "p", 1)
    config = {**rsp_body("p", 5), "status": {"matchedDevices": 4}}
    result = await StatusSubresource(rsp).apply(
        None, "p", config, WriteOptions(field_manager="controller")
    )
    obj = result.obj.obj
    assert obj["status"] == {"matchedDevices": 4}
    assert obj["spec"]["devices"]["priority"] == 1
    assert obj["metadata"]["generation"] == 1
    entry = next(e for e in obj["metadata"]["managedFields"] if e["manager"] == "controller")
    assert (entry["operation"], entry["subresource"]) == ("Apply", "status")


async def test_concurrent_patches_without_resource_version_all_apply(rsp: Registry) -> None:
    """Patches that do not pin a resourceVersion retry lost races instead of answering 409."""
    await create(rsp, "racy")
    labels = [f"l{i}" for i in range(12)]

    async def label(key: str) -> None:
        body = orjson.dumps({"metadata": {"labels": {key: "x"}}})
        await rsp.patch(None, "racy", body, MERGE_PATCH, replace(OPTS, user_agent="test/1"))

    await asyncio.gather(*(label(k) for k in labels))
    assert set((await stored(rsp, "racy"))["metadata"]["labels"]) == set(labels)


async def test_create_reports_metadata_and_spec_errors_together(rsp: Registry) -> None:
    """One 422 names every failing field: a bad name and a bad attribute in one answer."""
    body = rsp_body("Bad_Name")
    body["spec"]["devices"]["attributes"] = {"x": {"int": 1}}
    with pytest.raises(StatusError) as caught:
        await rsp.create(None, body, OPTS)
    fields = {c["field"] for c in (caught.value.details or {})["causes"]}
    assert fields == {"metadata.name", "spec.devices.attributes[x]"}


async def test_rpsr_replace_without_the_defaulted_limit_is_not_a_spec_change(
    rpsr: Registry,
) -> None:
    """PUT of the manifest as written (no limit) keeps the default instead of failing as immutable."""
    created = (await rpsr.create(None, rpsr_body("again"), OPTS)).obj.copy()
    resent = copy.deepcopy(created)
    del resent["spec"]["limit"]
    resent["metadata"]["labels"] = {"resent": "yes"}
    updated = (await rpsr.update(None, "again", resent, OPTS)).obj.obj
    assert updated["spec"]["limit"] == 100
    assert updated["metadata"]["generation"] == created["metadata"]["generation"]


async def test_apply_with_a_stale_resource_version_is_409(rsp: Registry) -> None:
    """An applied configuration that pins an old resourceVersion conflicts, as upstream."""
    created = await create(rsp, "pinned")
    await rsp.patch(None, "pinned", b'{"spec":{"devices":{"priority":2}}}', MERGE_PATCH, OPTS)
    config = rsp_body("pinned", 3)
    config["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    opts = WriteOptions(field_manager="applier")
    err = await status_error(rsp.apply(None, "pinned", config, opts))
    assert (err.code, err.reason) == (409, "Conflict")
    assert (await stored(rsp, "pinned"))["spec"]["devices"]["priority"] == 2

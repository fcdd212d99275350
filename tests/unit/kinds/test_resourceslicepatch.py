"""The ResourceSlicePatch strategy over a real SQLite store: taints get their timeAdded,
unchanged taints keep it, and bad taints are refused with 422 naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.kinds.resourceslicepatch import ResourceSlicePatchStrategy
from apiserver.machinery import ListOptions, Registry, WriteOptions
from apiserver.machinery.errors import StatusError
from apiserver.storage.sqlite import SQLiteStore

OPTS = WriteOptions()
GROUP = "resource.k8s.io"


@pytest.fixture
def patches(store: SQLiteStore) -> Registry:
    return Registry(ResourceSlicePatchStrategy.for_group(GROUP), store)


def rsp(taints: list[dict[str, Any]], rv: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": f"{GROUP}/v1alpha3",
        "kind": "ResourceSlicePatch",
        "metadata": {"name": "p"},
        "spec": {"devices": {"filter": {"device": "gpu-3"}, "taints": taints}},
    }
    if rv is not None:
        obj["metadata"]["resourceVersion"] = rv
    return obj


async def test_taints_get_time_added_and_keep_it(patches: Registry) -> None:
    given = "2025-05-05T05:05:05Z"
    created = await patches.create(
        None,
        rsp(
            [
                {"key": "x.io/a", "effect": "NoSchedule"},
                {"key": "x.io/b", "effect": "None", "timeAdded": given},
            ]
        ),
        OPTS,
    )
    stored = created.obj.obj["spec"]["devices"]["taints"]
    first = stored[0]["timeAdded"]
    assert first
    assert stored[1]["timeAdded"] == given
    rv = created.obj.obj["metadata"]["resourceVersion"]
    again = [{"key": "x.io/a", "effect": "NoSchedule"}, {"key": "x.io/c", "effect": "NoExecute"}]
    updated = await patches.update(None, "p", rsp(again, rv), OPTS)
    taints = updated.obj.obj["spec"]["devices"]["taints"]
    assert taints[0]["timeAdded"] == first  # unchanged taint, same time
    assert taints[1]["timeAdded"]


@pytest.mark.parametrize(
    ("taints", "field"),
    [
        ([{"key": f"x.io/t{i}", "effect": "NoSchedule"} for i in range(5)], "spec.devices.taints"),
        ([{"key": "x.io/t"}], "spec.devices.taints[0].effect"),
        ([{"key": "x.io/t", "effect": "PreferNoSchedule"}], "spec.devices.taints[0].effect"),
        ([{"key": "x.io/t", "value": "v" * 64, "effect": "None"}], "spec.devices.taints[0].value"),
        ([{"key": "x.io/" + "k" * 64, "effect": "None"}], "spec.devices.taints[0].key"),
    ],
)
async def test_bad_taints_are_refused_and_nothing_stored(
    patches: Registry, taints: list[dict[str, Any]], field: str
) -> None:
    with pytest.raises(StatusError) as err:
        await patches.create(None, rsp(taints), OPTS)
    assert err.value.code == 422
    assert [c["field"] for c in err.value.details["causes"]] == [field]
    assert (await patches.list(None, ListOptions())).items == []

"""The core v1 Pod kind over a real SQLite store: Pending on create, untyped upstream fields
kept as written, validation of the typed ones, kubectl's columns and field selectors."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.core import Pod, validate_pod
from apiserver.kinds.pod import PodStrategy, pod_ready, pod_restarts, pod_status
from apiserver.machinery import (
    ListOptions,
    Registry,
    StatusSubresource,
    WriteOptions,
    parse_field_selector,
)
from apiserver.machinery.errors import StatusError
from apiserver.machinery.table import table
from apiserver.storage.sqlite import SQLiteStore

OPTS = WriteOptions()


def pod(name: str = "p", status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }
    if status is not None:
        obj["status"] = status
    return obj


def fields(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    before = Pod.model_validate(old) if old is not None else None
    return [e.field for e in validate_pod(Pod.model_validate(obj), before)]


CLAIMS = [{"name": "gpu", "resourceClaimName": "one-gpu"}]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (pod(), []),
        (
            pod(
                nodeName="node-1",
                restartPolicy="Never",  # untyped here, kept as written
                resourceClaims=CLAIMS,
                containers=[
                    {"name": "a", "command": ["x"], "resources": {"claims": [{"name": "gpu"}]}}
                ],
                initContainers=[{"name": "init"}],
            ),
            [],
        ),
        (pod(containers=[]), ["spec.containers"]),
        (pod(containers=[{"name": "Bad_Name"}]), ["spec.containers[0].name"]),
        (
            pod(containers=[{"name": "a"}], initContainers=[{"name": "a"}]),
            ["spec.containers[0].name"],
        ),
        (
            pod(containers=[{"name": "a", "resources": {"claims": [{"name": "nope"}]}}]),
            ["spec.containers[0].resources.claims[0].name"],
        ),
        (pod(resourceClaims=[{"name": "gpu"}]), ["spec.resourceClaims[0]"]),
        (
            pod(
                resourceClaims=[
                    {"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}
                ]
            ),
            ["spec.resourceClaims[0]"],
        ),
        (pod(resourceClaims=[*CLAIMS, *CLAIMS]), ["spec.resourceClaims[1].name"]),
        (pod(nodeName="Node_1"), ["spec.nodeName"]),
    ],
)
def test_validate_pod(obj: dict[str, Any], expected: list[str]) -> None:
    assert fields(obj) == expected


def test_a_bound_pod_stays_on_its_node() -> None:
    assert fields(pod(nodeName="node-1"), pod()) == []
    assert fields(pod(nodeName="node-2"), pod(nodeName="node-1")) == ["spec.nodeName"]


def running(*ready: bool, restarts: int = 0) -> dict[str, Any]:
    return {
        "phase": "Running",
        "containerStatuses": [
            {"name": f"c{i}", "ready": r, "restartCount": restarts} for i, r in enumerate(ready)
        ],
    }


def test_columns() -> None:
    two = pod(containers=[{"name": "a"}, {"name": "b"}], status=running(True, False, restarts=1))
    assert (pod_ready(two), pod_status(two), pod_restarts(two)) == ("1/2", "Running", 2)
    crashing = pod(
        status={
            "phase": "Running",
            "containerStatuses": [
                {"name": "main", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
            ],
        }
    )
    assert pod_status(crashing) == "CrashLoopBackOff"
    evicted = pod(status={"phase": "Failed", "reason": "Evicted"})
    assert pod_status(evicted) == "Evicted"
    deleted = pod(status={"phase": "Running"})
    deleted["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert pod_status(deleted) == "Terminating"
    t = table(
        PodStrategy.core().table_columns(), [pod(nodeName="node-1", status={"phase": "Pending"})]
    )
    assert [(c["name"], c["priority"]) for c in t["columnDefinitions"]] == [
        ("Name", 0),
        ("Ready", 0),
        ("Status", 0),
        ("Restarts", 0),
        ("Age", 0),
        ("IP", 1),
        ("Node", 1),
        ("Nominated Node", 1),
        ("Readiness Gates", 1),
    ]
    cells = t["rows"][0]["cells"]
    assert cells[:4] == ["p", "0/1", "Pending", 0]
    assert cells[5:] == ["<none>", "node-1", "<none>", "<none>"]


@pytest.fixture
def pods(store: SQLiteStore) -> Registry:
    return Registry(PodStrategy.core(), store)


async def test_create_is_pending_and_keeps_untyped_fields(pods: Registry) -> None:
    body = pod(status={"phase": "Running"}, restartPolicy="Never", hostNetwork=True)
    body["spec"]["containers"][0]["command"] = ["sleep", "1"]
    created = (await pods.create("default", body, OPTS)).obj.obj
    assert created["status"] == {"phase": "Pending"}
    assert created["spec"]["restartPolicy"] == "Never"
    assert created["spec"]["hostNetwork"] is True
    assert created["spec"]["containers"][0]["command"] == ["sleep", "1"]


async def test_invalid_pod_is_refused_and_nothing_stored(pods: Registry) -> None:
    with pytest.raises(StatusError) as err:
        await pods.create("default", pod(containers=[]), OPTS)
    assert err.value.code == 422
    assert [c["field"] for c in err.value.details["causes"]] == ["spec.containers"]
    assert (await pods.list(None, ListOptions())).items == []


async def test_field_selectors_of_describe_node(pods: Registry) -> None:
    await pods.create("default", pod("on-1", nodeName="node-1"), OPTS)
    await pods.create("default", pod("on-2", nodeName="node-2"), OPTS)
    await pods.create("default", pod("nowhere"), OPTS)
    done = await pods.create("default", pod("done", nodeName="node-1"), OPTS)
    body = {**done.obj.obj, "status": {"phase": "Succeeded"}}
    await StatusSubresource(pods).update("default", "done", body, OPTS)

    async def names(selector: str) -> list[str]:
        opts = ListOptions(field_selector=parse_field_selector(selector, pods.field_getters))
        return [i.obj["metadata"]["name"] for i in (await pods.list(None, opts)).items]

    describe = "spec.nodeName=node-1,status.phase!=Succeeded,status.phase!=Failed"
    assert await names(describe) == ["on-1"]
    assert await names("spec.nodeName=") == ["nowhere"]
    assert await names("status.phase=Succeeded") == ["done"]

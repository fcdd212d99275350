"""The core v1 Namespace kind over a real SQLite store: phase and name label on create, DNS
label names, the system namespaces created at start, and the pure lifecycle checks."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.kinds.namespace import (
    NAME_LABEL,
    NamespaceStrategy,
    SystemNamespaces,
    creation_refusal,
    deletion_refusal,
    namespace_phase,
)
from apiserver.machinery import ListOptions, Registry, WriteOptions
from apiserver.machinery.errors import StatusError
from apiserver.machinery.table import table
from apiserver.storage.sqlite import SQLiteStore

OPTS = WriteOptions()


def ns(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, **extra}


@pytest.fixture
def namespaces(store: SQLiteStore) -> Registry:
    return Registry(NamespaceStrategy.core(), store)


async def test_create_sets_active_phase_and_name_label(namespaces: Registry) -> None:
    created = await namespaces.create(None, ns("team-a", status={"phase": "Terminating"}), OPTS)
    obj = created.obj.obj
    assert obj["status"] == {"phase": "Active"}
    assert obj["metadata"]["labels"] == {NAME_LABEL: "team-a"}
    body = ns("team-a", metadata={"name": "team-a", "labels": {NAME_LABEL: "other", "x": "y"}})
    body["metadata"]["resourceVersion"] = obj["metadata"]["resourceVersion"]
    updated = await namespaces.update(None, "team-a", body, OPTS)
    assert updated.obj.obj["metadata"]["labels"] == {NAME_LABEL: "team-a", "x": "y"}
    assert updated.obj.obj["status"] == {"phase": "Active"}


@pytest.mark.parametrize(
    ("name", "spec", "field"),
    [
        ("a.b", None, "metadata.name"),  # a DNS label, not a subdomain
        ("x" * 64, None, "metadata.name"),
        ("ok", {"finalizers": ["bad finalizer"]}, "spec.finalizers[0]"),
    ],
)
async def test_bad_namespace_is_refused_and_nothing_stored(
    namespaces: Registry, name: str, spec: dict[str, Any] | None, field: str
) -> None:
    body = ns(name, spec=spec) if spec else ns(name)
    with pytest.raises(StatusError) as err:
        await namespaces.create(None, body, OPTS)
    assert err.value.code == 422
    assert [c["field"] for c in err.value.details["causes"]] == [field]
    assert (await namespaces.list(None, ListOptions())).items == []


async def test_system_namespaces_are_created_once(store: SQLiteStore) -> None:
    first = SystemNamespaces(store)
    assert first.readiness() == {"system-namespaces": False}
    await first.start()
    await first.wait_created()
    assert first.readiness() == {"system-namespaces": True}
    await first.close()
    registry = Registry(NamespaceStrategy.core(), store)
    before = {
        i.obj["metadata"]["name"]: i.obj["metadata"]["resourceVersion"]
        for i in (await registry.list(None, ListOptions())).items
    }
    assert sorted(before) == ["default", "kube-system"]

    again = SystemNamespaces(store)  # a restart: both exist already, nothing is rewritten
    await again.start()
    await again.wait_created()
    await again.close()
    after = {
        i.obj["metadata"]["name"]: i.obj["metadata"]["resourceVersion"]
        for i in (await registry.list(None, ListOptions())).items
    }
    assert after == before


def test_phase_and_status_column() -> None:
    active = ns("a", status={"phase": "Active"})
    deleting = ns("b", status={"phase": "Active"})
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert namespace_phase(active) == "Active"
    assert namespace_phase(deleting) == "Terminating"
    assert namespace_phase(ns("c", status={"phase": "Terminating"})) == "Terminating"
    t = table(NamespaceStrategy.core().table_columns(), [active, deleting])
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Status", "Age"]
    assert [r["cells"][:2] for r in t["rows"]] == [["a", "Active"], ["b", "Terminating"]]


def test_creation_refusal() -> None:
    assert creation_refusal("a", ns("a", status={"phase": "Active"})) is None
    missing = creation_refusal("gone", None)
    assert missing is not None
    assert (missing.code, missing.reason) == (404, "NotFound")
    assert missing.message == 'namespaces "gone" not found'
    terminating = creation_refusal("t", ns("t", status={"phase": "Terminating"}))
    assert terminating is not None
    assert (terminating.code, terminating.reason) == (403, "Forbidden")
    assert terminating.details["causes"][0]["reason"] == "NamespaceTerminating"


def test_deletion_refusal() -> None:
    for name in ("default", "kube-system", "kube-public"):
        refused = deletion_refusal(name)
        assert refused is not None
        assert refused.code == 403
    assert deletion_refusal("team-a") is None

"""What typed clients need of stored objects: quantities stored and answered in the form
Kubernetes writes (``Quantity.String``) whatever form they were sent in, and a Node's
``status.nodeInfo`` with every field."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.cel.quantity import serialized
from apiserver.kinds.node import NODE_INFO_FIELDS, NodeStrategy
from apiserver.kinds.resourceslice import ResourceSliceStrategy
from apiserver.machinery import Registry, StatusUpdate, WriteOptions
from apiserver.storage.sqlite import SQLiteStore

OPTS = WriteOptions(field_manager="test")


@pytest.mark.parametrize(
    ("sent", "written"),
    [
        (85899345920, "85899345920"),  # a JSON number becomes its string
        ("1000m", "1"),
        ("1500m", "1500m"),
        ("0.5", "500m"),
        (1.5, "1500m"),
        ("1000", "1k"),
        ("1000k", "1M"),
        ("100M", "100M"),
        ("1.5Gi", "1536Mi"),
        ("2048Ki", "2Mi"),
        ("80Gi", "80Gi"),
        ("0.5Ki", "512"),  # binary below 1Ki is decimal
        ("1023Ki", "1023Ki"),
        ("1e3", "1e3"),  # an exponent stays an exponent
        ("12e2", "1200"),
        ("-1.5Gi", "-1536Mi"),
        ("0", "0"),
        ("0Gi", "0"),
        ("1n", "1n"),
    ],
)
def test_the_serialized_form_is_kubernetes(sent: str | int | float, written: str) -> None:
    assert serialized(sent) == written


def _slice() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "node-1-gpus"},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "node-1",
            "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
            "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "1.5Gi"}}}],
            "devices": [
                {
                    "name": "gpu-0",
                    "capacity": {
                        "memory": {"value": 85899345920},
                        "cores": {"value": "1000m"},
                    },
                }
            ],
        },
    }


async def test_a_slice_is_stored_with_canonical_quantities(store: SQLiteStore) -> None:
    registry = Registry(ResourceSliceStrategy.upstream(), store)
    created = (await registry.create(None, _slice(), OPTS)).obj.obj
    assert created["spec"]["devices"][0]["capacity"] == {
        "memory": {"value": "85899345920"},
        "cores": {"value": "1"},
    }
    assert created["spec"]["sharedCounters"][0]["counters"]["memory"]["value"] == "1536Mi"
    stored = (await registry.get(None, "node-1-gpus")).obj
    assert stored["spec"]["devices"][0]["capacity"]["memory"]["value"] == "85899345920"


async def test_an_update_in_another_form_of_the_same_values_changes_nothing(
    store: SQLiteStore,
) -> None:
    registry = Registry(ResourceSliceStrategy.upstream(), store)
    created = (await registry.create(None, _slice(), OPTS)).obj
    again = _slice()
    again["metadata"]["resourceVersion"] = created.obj["metadata"]["resourceVersion"]
    again["spec"]["devices"][0]["capacity"]["memory"]["value"] = "85899345920"
    updated = (await registry.update(None, "node-1-gpus", again, OPTS)).obj
    assert updated.revision == created.revision
    assert updated.obj["metadata"]["generation"] == 1


async def test_a_nodes_capacity_is_canonical(store: SQLiteStore) -> None:
    registry = Registry(NodeStrategy.core(), store)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1"},
        "status": {"capacity": {"cpu": "4000m", "memory": "1.5Gi", "pods": 110}},
    }
    stored = (await registry.create(None, node, OPTS)).obj.obj
    assert stored["status"]["capacity"] == {"cpu": "4", "memory": "1536Mi", "pods": "110"}


async def test_a_node_carries_every_node_info_field_as_kubernetes_writes_them(
    store: SQLiteStore,
) -> None:
    """Typed clients (the Python client's V1NodeSystemInfo) require all of them."""
    registry = Registry(NodeStrategy.core(), store)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}}
    info = (await registry.create(None, node, OPTS)).obj.obj["status"]["nodeInfo"]
    assert info == dict.fromkeys(NODE_INFO_FIELDS, "")
    written = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "kubelet"},
        "status": {"nodeInfo": {"kubeletVersion": "v1.37.0", "architecture": "amd64"}},
    }
    info = (await registry.create(None, written, OPTS)).obj.obj["status"]["nodeInfo"]
    assert info["kubeletVersion"] == "v1.37.0"
    assert info["bootID"] == ""
    assert set(info) == set(NODE_INFO_FIELDS)
    # A status write that leaves nodeInfo out gets the empty fields back.
    current = (await registry.get(None, "kubelet")).copy()
    current["status"] = {"capacity": {"cpu": "2"}}
    updated = await registry.update(
        None, "kubelet", current, OPTS, update=StatusUpdate(NodeStrategy.core())
    )
    assert updated.obj.obj["status"]["nodeInfo"] == dict.fromkeys(NODE_INFO_FIELDS, "")

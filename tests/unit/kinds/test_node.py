"""The core v1 Node kind: validation table, printed columns, field selectors, and a create
that keeps the status a kubelet registers the node with, over a real SQLite store."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.core import Node, validate_node, validate_node_status
from apiserver.kinds.node import NODE_INFO_FIELDS, NodeStrategy, node_roles, node_status
from apiserver.machinery import ListOptions, Registry, WriteOptions, parse_field_selector
from apiserver.machinery.errors import StatusError
from apiserver.machinery.table import table
from apiserver.storage.sqlite import SQLiteStore

OPTS = WriteOptions()


def node(name: str = "n", spec: dict[str, Any] | None = None, **status: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    if spec is not None:
        obj["spec"] = spec
    if status:
        obj["status"] = status
    return obj


def errors_of(spec: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    new = Node.model_validate(node(spec=spec))
    before = Node.model_validate(node(spec=old)) if old is not None else None
    return [e.field for e in validate_node(new, before)]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, []),
        (
            {
                "unschedulable": True,
                "providerID": "example://n",
                "podCIDRs": ["10.0.0.0/24", "fd00::/64"],
                "taints": [
                    {"key": "example.com/gpu", "value": "v", "effect": "NoSchedule"},
                    {
                        "key": "example.com/gpu",
                        "effect": "NoExecute",
                        "timeAdded": "2026-01-01T00:00:00Z",
                    },
                ],
            },
            [],
        ),
        ({"taints": [{"key": "a b", "effect": "NoSchedule"}]}, ["spec.taints[0].key"]),
        ({"taints": [{"key": "", "effect": "NoSchedule"}]}, ["spec.taints[0].key"]),
        (
            {"taints": [{"key": "k", "value": "v v", "effect": "NoSchedule"}]},
            ["spec.taints[0].value"],
        ),
        (
            {
                "taints": [
                    {"key": "k", "effect": "NoSchedule"},
                    {"key": "k", "effect": "NoSchedule"},
                ]
            },
            ["spec.taints[1]"],
        ),
        ({"podCIDRs": ["10.0.0.0/24", "10.1.0.0/24"]}, ["spec.podCIDRs"]),
        (
            {"podCIDRs": ["10.0.0.0/24", "fd00::/64", "10.1.0.0/24"]},
            ["spec.podCIDRs", "spec.podCIDRs"],
        ),
        ({"podCIDRs": ["not-a-cidr"]}, ["spec.podCIDRs[0]"]),
        ({"podCIDR": "10.9.0.0/24", "podCIDRs": ["10.0.0.0/24"]}, ["spec.podCIDR"]),
        ({"podCIDR": "nope"}, ["spec.podCIDR"]),
    ],
)
def test_validate_node_spec(spec: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(spec) == expected


def test_pod_cidrs_and_provider_id_stay_once_set() -> None:
    old = {"podCIDRs": ["10.0.0.0/24"], "providerID": "example://a"}
    assert errors_of({**old, "unschedulable": True}, old) == []
    assert errors_of({"podCIDRs": ["10.0.0.0/24"]}, {}) == []
    assert errors_of({"podCIDRs": ["10.1.0.0/24"], "providerID": "example://b"}, old) == [
        "spec.podCIDRs",
        "spec.providerID",
    ]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"capacity": {"cpu": "4", "example.com/gpu": 8}, "allocatable": {"cpu": "3500m"}}, []),
        ({"capacity": {"cpu": "-1"}}, ["status.capacity[cpu]"]),
        ({"allocatable": {"a b": "1"}}, ["status.allocatable[a b]"]),
        ({"conditions": [{"type": "", "status": "True"}]}, ["status.conditions[0].type"]),
        ({"addresses": [{"type": "InternalIP", "address": ""}]}, ["status.addresses[0].address"]),
    ],
)
def test_validate_node_status(status: dict[str, Any], expected: list[str]) -> None:
    assert [e.field for e in validate_node_status(Node.model_validate(node(**status)))] == expected


EMPTY_NODE_INFO = dict.fromkeys(NODE_INFO_FIELDS, "")
"""What Kubernetes writes for a node whose kubelet reported nothing yet."""


def ready(status: str) -> dict[str, Any]:
    return {
        "conditions": [
            {"type": "MemoryPressure", "status": "False"},
            {"type": "Ready", "status": status},
        ]
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (node(**ready("True")), "Ready"),
        (node(**ready("False")), "NotReady"),
        (node(**ready("Unknown")), "NotReady"),
        (node(), "Unknown"),
        (node(spec={"unschedulable": True}, **ready("True")), "Ready,SchedulingDisabled"),
        (node(spec={"unschedulable": False}, **ready("True")), "Ready"),
    ],
)
def test_status_column(obj: dict[str, Any], expected: str) -> None:
    assert node_status(obj) == expected


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({}, "<none>"),
        ({"kubernetes.io/hostname": "n"}, "<none>"),
        (
            {"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": ""},
            "control-plane,worker",
        ),
        ({"kubernetes.io/role": "gpu"}, "gpu"),
        ({"node-role.kubernetes.io/": ""}, "<none>"),
    ],
)
def test_roles_column(labels: dict[str, str], expected: str) -> None:
    obj = node()
    obj["metadata"]["labels"] = labels
    assert node_roles(obj) == expected


def test_table_has_kubectl_columns_and_wide_ones() -> None:
    obj = node(
        spec={"unschedulable": True},
        addresses=[
            {"type": "InternalIP", "address": "10.0.0.1"},
            {"type": "InternalIP", "address": "fd00::1"},
            {"type": "Hostname", "address": "n"},
        ],
        nodeInfo={"kubeletVersion": "v1.36.0", "osImage": "Debian"},
        **ready("True"),
    )
    t = table(NodeStrategy.core().table_columns(), [obj])
    names = [(c["name"], c["priority"]) for c in t["columnDefinitions"]]
    assert names == [
        ("Name", 0),
        ("Status", 0),
        ("Roles", 0),
        ("Age", 0),
        ("Version", 0),
        ("Internal-IP", 1),
        ("External-IP", 1),
        ("OS-Image", 1),
        ("Kernel-Version", 1),
        ("Container-Runtime", 1),
    ]
    cells = t["rows"][0]["cells"]
    assert cells[:3] == ["n", "Ready,SchedulingDisabled", "<none>"]
    assert cells[4:] == [
        "v1.36.0",
        "10.0.0.1,fd00::1",
        "<none>",
        "Debian",
        "<unknown>",
        "<unknown>",
    ]


@pytest.fixture
def nodes(store: SQLiteStore) -> Registry:
    return Registry(NodeStrategy.core(), store)


async def test_create_keeps_status_and_syncs_pod_cidrs(nodes: Registry) -> None:
    """A node is registered with its status in one create (as a kubelet does); podCIDR and
    podCIDRs are kept in step."""
    created = await nodes.create(None, node(spec={"podCIDR": "10.0.0.0/24"}, **ready("True")), OPTS)
    assert created.obj.obj["status"] == {**ready("True"), "nodeInfo": EMPTY_NODE_INFO}
    assert created.obj.obj["spec"]["podCIDRs"] == ["10.0.0.0/24"]
    assert NodeStrategy.core().resource.key(None, "n") == "/core/nodes/n"


async def test_update_of_main_resource_keeps_status(nodes: Registry) -> None:
    created = await nodes.create(None, node(**ready("True")), OPTS)
    body = node(spec={"unschedulable": True}, **ready("False"))
    body["metadata"]["resourceVersion"] = created.obj.obj["metadata"]["resourceVersion"]
    updated = await nodes.update(None, "n", body, OPTS)
    assert updated.obj.obj["spec"] == {"unschedulable": True}
    assert updated.obj.obj["status"] == {**ready("True"), "nodeInfo": EMPTY_NODE_INFO}


async def test_invalid_node_is_refused_and_nothing_stored(nodes: Registry) -> None:
    bad = node(spec={"taints": [{"key": "a b", "effect": "NoSchedule"}]})
    with pytest.raises(StatusError) as err:
        await nodes.create(None, bad, OPTS)
    assert err.value.code == 422
    assert [c["field"] for c in err.value.details["causes"]] == ["spec.taints[0].key"]
    assert (await nodes.list(None, ListOptions())).items == []


async def test_field_selector_on_unschedulable(nodes: Registry) -> None:
    await nodes.create(None, node("a", spec={"unschedulable": True}), OPTS)
    await nodes.create(None, node("b", spec={}), OPTS)
    await nodes.create(None, node("c"), OPTS)
    getters = nodes.field_getters

    async def names(selector: str) -> list[str]:
        opts = ListOptions(field_selector=parse_field_selector(selector, getters))
        return [i.obj["metadata"]["name"] for i in (await nodes.list(None, opts)).items]

    assert await names("spec.unschedulable=true") == ["a"]
    assert await names("spec.unschedulable=false") == ["b", "c"]
    assert await names("metadata.name=b") == ["b"]

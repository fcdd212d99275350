"""Aggregated mode against a second process of this server in standalone mode, which plays
the kube-apiserver: it serves resource.k8s.io/v1 slices, classes and claims, core v1 nodes
and events. The aggregated server reads them by list+watch and serves its own kinds under
another group (the upstream serves resource.k8s.io/v1alpha3 itself, so that group clashes).
Over the same objects, its device view and pool status answer as the upstream's own do, and
they stay so across an upstream restart and a watch that comes back 410 Gone.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from devtools.localetcd import LocalEtcd
from devtools.waiting import eventually, wait_for

from .harness import REPO, ServerProcess, start_server
from .objects import node_slice, unique
from .tcpproxy import Proxy

EXAMPLES = REPO / "examples"
OURS = "resource.x-k8s.io"
UPSTREAM = "resource.k8s.io"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
DRIVER = "gpu.example.com"
WAIT = 60.0


def devices_path(group: str) -> str:
    return f"/apis/{group}/v1alpha3/devices"


def requests_path(group: str) -> str:
    return f"/apis/{group}/v1alpha1/resourcepoolstatusrequests"


def in_group(manifest: str, group: str) -> str:
    """A manifest of our kinds moved from resource.k8s.io to ``group``."""
    return manifest.replace(f"apiVersion: {UPSTREAM}/", f"apiVersion: {group}/")


def aggregated_args(kubeconfig: Path, *extra: str) -> list[str]:
    return ["--mode", "aggregated", "--kubeconfig", str(kubeconfig), *extra]


def allocate(server: ServerProcess, claim: str, request: str, devices: list[str]) -> None:
    """What the scheduler writes once it has picked devices (pool and device)."""
    results = [
        {"request": request, "driver": DRIVER, "pool": d.split("/")[0], "device": d.split("/")[1]}
        for d in devices
    ]
    patch = {"status": {"allocation": {"devices": {"results": results}}}}
    server.kubectl(
        "patch", f"resourceclaim/{claim}", "--subresource=status", "--type=merge", "-p",
        json.dumps(patch),
    )  # fmt: skip


def slice_obj(name: str, node: str, devices: int) -> dict[str, Any]:
    return node_slice(name, DRIVER, node, [{"name": f"gpu-{i}"} for i in range(devices)])


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """An object without what differs between two servers holding the same thing: its
    group, its resourceVersion, its identity and its times (a patch taint's timeAdded is
    when each server took the patch)."""
    meta = {
        k: v
        for k, v in obj["metadata"].items()
        if k not in ("resourceVersion", "uid", "creationTimestamp", "managedFields")
    }
    rest = {k: _timeless(v) for k, v in obj.items() if k not in ("apiVersion", "metadata")}
    return {**rest, "metadata": meta}


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k != "timeAdded"}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


async def device_list(server: ServerProcess, group: str) -> list[dict[str, Any]]:
    async with server.async_client() as http:
        resp = await http.get(devices_path(group))
    assert resp.status_code == 200, resp.text
    return [comparable(d) for d in resp.json()["items"]]


async def same_devices(upstream: ServerProcess, aggregated: ServerProcess) -> bool:
    return await device_list(upstream, UPSTREAM) == await device_list(aggregated, OURS)


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The example cluster with some claims allocated, its pool status answered."""
    server = start_server(
        tmp_path_factory.mktemp("upstream"),
        ["--pool-status", "--bookmark-interval", "1"],
    )
    try:
        server.kubectl("apply", "-f", str(EXAMPLES))
        allocate(server, "two-gpus-same-model", "gpus", ["node-1/gpu-0", "node-1/gpu-1"])
        allocate(server, "one-gpu", "gpu", ["node-2/gpu-3"])
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def aggregated(
    upstream: ServerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """Our kinds under another group, the example's patch applied to them."""
    server = start_server(
        tmp_path_factory.mktemp("aggregated"),
        aggregated_args(upstream.kubeconfig, "--group", OURS, "--pool-status", "--patch-status"),
    )
    try:
        patch = in_group((EXAMPLES / "50-slicepatch.yaml").read_text(), OURS)
        server.kubectl("apply", "-f", "-", input=patch)
        yield server
    finally:
        server.stop()


def test_refuses_to_start_when_the_upstream_serves_our_version(
    upstream: ServerProcess, tmp_path: Path
) -> None:
    """The upstream serves resource.k8s.io/v1alpha3 itself: start is refused, naming the
    APIService it would clash with and the flag that avoids it; nothing is served. Its
    v1alpha3 holds ResourcePoolStatusRequests, as Kubernetes 1.36+ does."""
    with upstream.client() as http:
        listed = http.get("/apis/resource.k8s.io/v1alpha3").json()["resources"]
    assert "resourcepoolstatusrequests" in {r["name"] for r in listed}
    with pytest.raises(RuntimeError) as refused:
        start_server(tmp_path / "clash", aggregated_args(upstream.kubeconfig))
    message = str(refused.value)
    assert "exited with 2" in message
    assert "APIService v1alpha3.resource.k8s.io" in message
    assert "APIService v1alpha1.resource.k8s.io" in message
    assert "--group resource.x-k8s.io" in message


def test_refuses_to_start_without_a_kube_apiserver(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError) as refused:
        start_server(tmp_path / "alone", ["--mode", "aggregated"])
    assert "pass --kubeconfig" in str(refused.value)


def test_serves_only_our_kinds(aggregated: ServerProcess) -> None:
    resources = aggregated.kubectl("api-resources", "-o", "name").stdout.split()
    assert sorted(resources) == sorted(
        f"{plural}.{OURS}"
        for plural in (
            "allocationreviews",
            "devicereservations",
            "devices",
            "resourcepools",
            "resourceslicepatches",
            "resourcepoolstatusrequests",
        )
    )
    ready = aggregated.kubectl("get", "--raw", "/readyz?verbose").stdout
    for source in (
        "resourceslices",
        "deviceclasses",
        "resourceclaims",
        "nodes",
        "devicetaintrules",
    ):
        assert f"[+]informer-{source} ok" in ready


async def test_device_view_is_the_upstream_one(
    upstream: ServerProcess, aggregated: ServerProcess
) -> None:
    """The same devices, attributes and patch taints as the upstream computes from its own
    objects; a slice added upstream shows in both."""
    await eventually(lambda: same_devices(upstream, aggregated), timeout=WAIT)
    devices = await device_list(aggregated, OURS)
    assert len(devices) > 10
    [tainted] = [d for d in devices if d["metadata"]["name"] == "node-4-gpu.example.com.gpu-3"]
    assert tainted["spec"]["taints"][0]["key"] == "gpu.example.com/unhealthy"  # our patch's
    assert tainted["status"]["patchedBy"][0]["name"] == "node-4-gpu-3-unhealthy"

    name = unique("added")
    async with upstream.async_client() as http:
        resp = await http.post(SLICES, json=slice_obj(name, "node-5", 2))
        assert resp.status_code == 201, resp.text
    await eventually(lambda: same_devices(upstream, aggregated), timeout=WAIT)
    names = {d["metadata"]["name"] for d in await device_list(aggregated, OURS)}
    assert len(names) == len(devices) + 2


async def test_the_clusters_device_taint_rules_reach_the_device_view(
    upstream: ServerProcess, aggregated: ServerProcess
) -> None:
    """A DeviceTaintRule in the cluster taints the device it selects in our view as it does
    in the upstream's own, and deleting it takes the taint away in both."""
    name = unique("rule")
    device = "node-3-gpu.example.com.gpu-1"
    taint = {"key": "example.com/maintenance", "value": "planned", "effect": "NoSchedule"}
    rule = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": {
            "deviceSelector": {"driver": DRIVER, "pool": "node-3", "device": "gpu-1"},
            "taint": taint,
        },
    }
    upstream.kubectl("apply", "-f", "-", input=yaml.safe_dump(rule))

    async def ours() -> dict[str, Any]:
        [found] = [
            d for d in await device_list(aggregated, OURS) if d["metadata"]["name"] == device
        ]
        return found

    async def tainted() -> bool:
        keys = [t["key"] for t in (await ours())["spec"].get("taints") or ()]
        return keys == [taint["key"]]

    try:
        await eventually(tainted, timeout=WAIT)
        assert (await ours())["status"]["patchedBy"][0]["name"] == f"DeviceTaintRule/{name}"
        await eventually(lambda: same_devices(upstream, aggregated), timeout=WAIT)
    finally:
        upstream.kubectl("delete", "devicetaintrule", name)
    await eventually(lambda: _untainted(aggregated, device), timeout=WAIT)
    await eventually(lambda: same_devices(upstream, aggregated), timeout=WAIT)


async def _untainted(server: ServerProcess, device: str) -> bool:
    found = [d for d in await device_list(server, OURS) if d["metadata"]["name"] == device]
    return len(found) == 1 and "taints" not in found[0]["spec"]


def pool_status(server: ServerProcess, group: str, name: str) -> dict[str, Any]:
    manifest = yaml.safe_dump(
        {
            "apiVersion": f"{group}/v1alpha1",
            "kind": "ResourcePoolStatusRequest",
            "metadata": {"name": name},
            "spec": {"driver": DRIVER},
        }
    )
    server.kubectl("create", "-f", "-", input=manifest)
    server.kubectl(
        "wait", "--for=condition=Complete", f"resourcepoolstatusrequests.{group}/{name}",
        "--timeout=60s",
    )  # fmt: skip
    got = yaml.safe_load(
        server.kubectl("get", f"resourcepoolstatusrequests.{group}/{name}", "-o", "yaml").stdout
    )
    status: dict[str, Any] = got["status"]
    status.pop("observationTime", None)
    for condition in status.get("conditions") or ():
        condition.pop("lastTransitionTime", None)
    return status


async def test_pool_status_is_the_upstream_one(
    upstream: ServerProcess, aggregated: ServerProcess
) -> None:
    await eventually(lambda: same_devices(upstream, aggregated), timeout=WAIT)
    name = unique("pools")
    theirs = pool_status(upstream, UPSTREAM, name)
    ours = pool_status(aggregated, OURS, name)
    assert ours == theirs
    pools = {p["poolName"]: p for p in ours["pools"]}
    assert pools["node-1"]["allocatedDevices"] == 2  # the claims upstream count
    assert pools["node-2"]["allocatedDevices"] == 1
    assert pools["node-4"]["unavailableDevices"] == 1  # our patch's taint


def allocation_review(server: ServerProcess, group: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The status of an AllocationReview, without what differs between two servers holding
    the same devices (a reservation's generated name and expiry, and the state version,
    which each server process counts from a prefix of its own)."""
    body = {"apiVersion": f"{group}/v1alpha3", "kind": "AllocationReview", "spec": spec}
    with server.client() as http:
        resp = http.post(f"/apis/{group}/v1alpha3/allocationreviews", json=body)
    assert resp.status_code == 201, resp.text
    status: dict[str, Any] = resp.json()["status"]
    assert status.pop("stateVersion")
    reservation = status.get("reservation")
    if reservation is not None:
        assert reservation.pop("name")
        assert reservation.pop("expirationTime")
    return status


def chosen(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(node, pool, device) of every device the feasible nodes' answers allocate."""
    return [
        (node["nodeName"], result["pool"], result["device"])
        for node in status["nodes"]
        if node["feasible"]
        for allocation in node["allocations"]
        for result in allocation["devices"]["results"]
    ]


async def test_allocation_review_is_the_upstream_one(
    upstream: ServerProcess, aggregated: ServerProcess
) -> None:
    """The same review put to the upstream and to the aggregated server gets the same
    answer: the same candidates, feasibility, reasons, scores and devices (stored claims, the
    upstream's allocations and our patch's taint included); reserving twice in a row, each
    server holds the same devices and the second answer avoids them alike."""
    await eventually(lambda: same_devices(upstream, aggregated), timeout=WAIT)
    # Four GPUs of one model: node-1 and node-2 have some allocated upstream, node-4 one
    # tainted by our patch.
    spec: dict[str, Any] = {"claims": [{"namespace": "default", "name": "four-contiguous-gpus"}]}
    theirs = allocation_review(upstream, UPSTREAM, spec)
    ours = allocation_review(aggregated, OURS, spec)
    assert ours == theirs
    nodes = {n["nodeName"]: n for n in ours["nodes"]}
    assert {"node-1", "node-2", "node-3", "node-4"} <= set(nodes)
    assert [n for n, node in sorted(nodes.items()) if node["feasible"]] == ["node-3"], ours
    for infeasible in ("node-1", "node-2", "node-4"):
        assert nodes[infeasible]["reasons"], ours
    taken = {("node-1", "node-1", "gpu-0"), ("node-1", "node-1", "gpu-1")}  # allocated upstream
    assert not taken & set(chosen(ours))
    assert ("node-4", "node-4", "gpu-3") not in chosen(ours)  # our patch's NoSchedule taint

    two_gpus = {"deviceClassName": "gpu.example.com", "count": 2}
    reserving = {
        "claims": [
            {
                "name": "two",
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": two_gpus}]}},
            }
        ],
        "nodeNames": ["node-3"],
        "reserve": True,
        "reservationSeconds": 60,
    }
    first = [
        allocation_review(s, g, reserving) for s, g in ((upstream, UPSTREAM), (aggregated, OURS))
    ]
    assert first[0] == first[1]
    assert first[0]["reservation"] == {"nodeName": "node-3"}
    second = [
        allocation_review(s, g, reserving) for s, g in ((upstream, UPSTREAM), (aggregated, OURS))
    ]
    assert second[0] == second[1]
    assert not set(chosen(first[0])) & set(chosen(second[0]))  # the first one's are held
    for server, group in ((upstream, UPSTREAM), (aggregated, OURS)):
        server.kubectl("delete", f"devicereservations.{group}", "--all")


async def test_survives_an_upstream_restart(
    upstream: ServerProcess, aggregated: ServerProcess
) -> None:
    """The upstream goes away and comes back: the aggregated server keeps serving what it
    had, then catches up with what changed after the restart."""
    await eventually(lambda: same_devices(upstream, aggregated), timeout=WAIT)
    before = await device_list(aggregated, OURS)
    upstream.stop()
    assert await device_list(aggregated, OURS) == before
    upstream.start()
    name = unique("restarted")
    async with upstream.async_client() as http:
        resp = await http.post(SLICES, json=slice_obj(name, "node-3", 3))
        assert resp.status_code == 201, resp.text
    await eventually(lambda: same_devices(upstream, aggregated), timeout=WAIT)
    assert len(await device_list(aggregated, OURS)) == len(before) + 3


async def watch_from(http: httpx.AsyncClient, version: str) -> int:
    """The HTTP status of a watch of slices from ``version`` (or the code of its first
    ERROR event)."""
    params = {"watch": "1", "resourceVersion": version, "timeoutSeconds": "1"}
    async with http.stream("GET", SLICES, params=params) as resp:
        if resp.status_code != 200:
            return resp.status_code
        async for line in resp.aiter_lines():
            event = json.loads(line)
            if event["type"] == "ERROR":
                return int(event["object"]["code"])
    return 200


async def test_lists_again_after_410(tmp_path: Path) -> None:
    """The connection to the upstream drops; meanwhile the upstream's short history is
    compacted past where the aggregated server's watch was, so its watch comes back 410
    Gone: it lists again, and nothing is lost (a slice deleted meanwhile is gone too)."""
    short = start_server(tmp_path / "short", ["--watch-history", "3"])
    proxy = Proxy(short.port)
    await proxy.up()
    config = yaml.safe_load(short.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    through = tmp_path / "through-proxy"
    through.write_text(yaml.safe_dump(config))
    servers = [short]
    try:
        async with short.async_client() as http:
            for i in range(3):
                resp = await http.post(SLICES, json=slice_obj(f"before-{i}", f"n{i}", 1))
                assert resp.status_code == 201, resp.text
            # Started from a thread: its readiness waits on the proxy, which runs on this loop.
            aggregated = await asyncio.to_thread(
                start_server, tmp_path / "agg", aggregated_args(through, "--group", OURS)
            )
            servers.append(aggregated)
            await eventually(lambda: same_devices(short, aggregated), timeout=WAIT)
            listed = (await http.get(SLICES)).json()["metadata"]["resourceVersion"]
            await proxy.down()
            assert (await http.delete(f"{SLICES}/before-0")).status_code == 200
            for i in range(110):  # past the upstream's history (compacted in batches)
                resp = await http.post(SLICES, json=slice_obj(f"during-{i}", "n9", 1))
                assert resp.status_code == 201, resp.text
            assert await watch_from(http, listed) == 410  # where the aggregated one was
            await proxy.up()
            await eventually(lambda: same_devices(short, aggregated), timeout=WAIT)
        slices = [d["spec"]["resourceSliceName"] for d in await device_list(aggregated, OURS)]
        assert len(slices) == 112
        assert "before-0" not in slices  # deleted while the aggregated server was cut off
        assert {"before-1", "during-109"} <= set(slices)
    finally:
        for server in reversed(servers):
            server.stop()
        await proxy.down()


def test_events_go_to_the_upstream(upstream: ServerProcess, aggregated: ServerProcess) -> None:
    """A patch whose selector fails on the cluster's devices: the Warning Event about it is
    written to the upstream, once, about our kind in our group."""
    name = unique("faulty")
    expression = f'device.attributes["{DRIVER}"].nosuchattribute == "x"'
    patch = {
        "apiVersion": f"{OURS}/v1alpha3",
        "kind": "ResourceSlicePatch",
        "metadata": {"name": name},
        "spec": {
            "devices": {
                "filter": {"driver": DRIVER, "selectors": [{"cel": {"expression": expression}}]},
                "attributes": {f"{DRIVER}/checked": {"bool": True}},
            }
        },
    }
    aggregated.kubectl("create", "-f", "-", input=json.dumps(patch))

    def events() -> list[dict[str, Any]]:
        with upstream.client() as http:
            listed = http.get(
                "/api/v1/namespaces/default/events",
                params={"fieldSelector": f"involvedObject.name={name}"},
            )
        assert listed.status_code == 200, listed.text
        items: list[dict[str, Any]] = listed.json()["items"]
        return items

    [event] = wait_for(events, "the Event on the upstream", timeout=WAIT)
    assert (event["type"], event["reason"]) == ("Warning", "FaultySelector")
    assert event["involvedObject"]["apiVersion"] == f"{OURS}/v1alpha3"
    assert event["involvedObject"]["kind"] == "ResourceSlicePatch"
    assert "nosuchattribute" in event["message"]
    assert event["source"]["component"] == "dra-apiserver"


async def test_two_replicas_share_our_kinds_through_etcd(
    upstream: ServerProcess, etcd: LocalEtcd, tmp_path: Path
) -> None:
    """The ha install's shape: two aggregated replicas over one etcd, each reading the
    upstream. A patch made through one changes the device view of the other."""
    args = aggregated_args(upstream.kubeconfig, "--group", OURS, "--etcd-prefix", "/aggregated")
    a = start_server(tmp_path / "a", args, storage=etcd.url)
    try:
        b = start_server(tmp_path / "b", args, storage=etcd.url)
        try:
            name = unique("shared")
            patch = {
                "apiVersion": f"{OURS}/v1alpha3",
                "kind": "ResourceSlicePatch",
                "metadata": {"name": name},
                "spec": {
                    "devices": {
                        "filter": {"driver": DRIVER, "pool": "node-3", "device": "gpu-0"},
                        "attributes": {f"{DRIVER}/shared": {"bool": True}},
                    }
                },
            }
            a.kubectl("create", "-f", "-", input=json.dumps(patch))
            # The driver's own domain is implied: the device shows the attribute as "shared".
            device = f"{devices_path(OURS)}/node-3-{DRIVER}.gpu-0"

            async def shared(server: ServerProcess) -> bool:
                async with server.async_client() as http:
                    got = (await http.get(device)).json()
                return got["spec"]["attributes"].get("shared") == {"bool": True}

            await eventually(lambda: shared(b), timeout=WAIT)
            await eventually(lambda: shared(a), timeout=WAIT)
            b.kubectl("delete", f"resourceslicepatches.{OURS}/{name}")

            async def unshared(server: ServerProcess) -> bool:
                return not await shared(server)

            await eventually(lambda: unshared(a), timeout=WAIT)
            assert await device_list(a, OURS) == await device_list(b, OURS)
        finally:
            b.stop()
    finally:
        a.stop()

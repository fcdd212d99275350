"""Objects shaped like what real drivers publish (examples/drivers/), applied with kubectl to
the real server: NVIDIA-style MIG in the Kubernetes 1.35 layout (a counter slice, and the
whole GPU with every MIG placement in another slice of the pool), the example driver's GPUs
with partitions, and NICs with list-type attributes. Checked against counts worked out by
hand: the Device view, ResourcePool counts, a ResourcePoolStatusRequest and AllocationReviews
(a MIG device taken makes the whole GPU and the overlapping placements unavailable, and
releasing it makes them available again)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from devtools.waiting import wait_for

from .harness import REPO, ServerProcess, start_server
from .objects import GROUP, unique, write_allocation

DRIVERS = REPO / "examples" / "drivers"
POOLS = f"/apis/{GROUP}/v1alpha3/resourcepools"
DEVICES = f"/apis/{GROUP}/v1alpha3/devices"
COUNTS = ("totalDevices", "allocatedDevices", "availableDevices", "unavailableDevices")
MIG_POOL = "gpu.nvidia.com.gpu-node-1"
EXAMPLE_POOL = "gpu.example.com.gpu-node-2"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"

# The A100's MIG devices by placement (profile: first memory slice of each placement).
PLACEMENTS = {
    "1g-5gb": range(0, 7),
    "2g-10gb": (0, 2, 4),
    "3g-20gb": (0, 4),
    "4g-20gb": (0,),
    "7g-40gb": (0,),
}
MIG_DEVICES = {"gpu-0"} | {f"gpu-0-mig-{p}-{s}" for p, starts in PLACEMENTS.items() for s in starts}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = start_server(
        tmp_path_factory.mktemp("drivers"), ["--bookmark-interval", "1", "--pool-status"]
    )
    proc.kubectl("apply", "-f", str(DRIVERS))
    yield proc
    proc.stop()


# -- helpers ---------------------------------------------------------------------------------


def counts(server: ServerProcess, pool: str) -> tuple[int, ...] | None:
    with server.client() as client:
        resp = client.get(f"{POOLS}/{pool}")
    if resp.status_code != 200:
        return None
    status = resp.json().get("status") or {}
    return tuple(status.get(k, -1) for k in COUNTS)


def wait_counts(server: ServerProcess, pool: str, expected: tuple[int, int, int, int]) -> None:
    wait_for(lambda: counts(server, pool) == expected, f"{pool} counts {expected}")


def take(server: ServerProcess, device_class: str, driver: str, pool: str, device: str) -> str:
    """A claim of the class, allocated the device as the scheduler writes it; its name."""
    name = unique("take")
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": device_class}}]}
        },
    }
    server.kubectl("create", "-f", "-", input=json.dumps(claim))
    result = {"request": "r", "driver": driver, "pool": pool, "device": device}
    write_allocation(server, name, {"devices": {"results": [result]}})
    return name


def release(server: ServerProcess, claim: str) -> None:
    server.kubectl("delete", f"resourceclaim/{claim}", "--wait=true")


def request(name: str, device_class: str, *selectors: str, count: int = 1) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class, "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": exactly}


def profile(name: str) -> str:
    return f'device.attributes["gpu.nvidia.com"].profile == "{name}"'


def review(
    server: ServerProcess,
    requests: list[dict[str, Any]],
    node: str,
    constraints: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The review of one inline claim on one node: that node's answer."""
    devices: dict[str, Any] = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    body = {
        "apiVersion": f"{GROUP}/v1alpha3",
        "kind": "AllocationReview",
        "spec": {"claims": [{"name": "c", "spec": {"devices": devices}}], "nodeNames": [node]},
    }
    out = server.kubectl("create", "-f", "-", "-o", "yaml", input=yaml.safe_dump(body)).stdout
    [answer] = yaml.safe_load(out)["status"]["nodes"]
    assert answer["nodeName"] == node
    return dict(answer)


def chosen(answer: dict[str, Any]) -> dict[str, set[str]]:
    """Request -> the devices a feasible answer gives it."""
    assert answer["feasible"], answer.get("reasons")
    [allocation] = answer["allocations"]
    out: dict[str, set[str]] = {}
    for result in allocation["devices"]["results"]:
        out.setdefault(result["request"], set()).add(result["device"])
    return out


def pool_status_request(server: ServerProcess, driver: str) -> dict[str, dict[str, Any]]:
    name = unique("rpsr")
    manifest = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": {"driver": driver},
    }
    server.kubectl("create", "-f", "-", input=json.dumps(manifest))
    server.kubectl("wait", "--for=condition=Complete", f"rpsr/{name}", "--timeout=60s")
    status = json.loads(server.kubectl("get", f"rpsr/{name}", "-o", "json").stdout)["status"]
    return {p["poolName"]: p for p in status["pools"]}


def devices_of(
    client: httpx.Client, driver: str, pool: str | None = None
) -> dict[str, dict[str, Any]]:
    selector = f"spec.driver={driver}" + (f",spec.pool.name={pool}" if pool else "")
    resp = client.get(DEVICES, params={"fieldSelector": selector})
    assert resp.status_code == 200, resp.text
    return {d["spec"]["device"]: d["spec"] for d in resp.json()["items"]}


# -- the objects as published --------------------------------------------------------------


def test_the_driver_objects_are_stored_and_viewed(server: ServerProcess) -> None:
    """The counter slice has no devices, the device slice consumes its counter set, and the
    Device view shows all 15 MIG-layout devices on gpu-node-1 and the NICs' list attributes
    as published."""
    with server.client() as client:
        mig = wait_for(
            lambda: (d := devices_of(client, "gpu.nvidia.com")) and len(d) == 15 and d,
            "the 15 devices of the A100",
        )
        nics = wait_for(
            # (the shared NICs of shared-nic.yaml, same driver, are node-1's pool)
            lambda: (
                (d := devices_of(client, "nic.example.com", "gpu-node-1")) and len(d) == 2 and d
            ),
            "the NICs",
        )
    assert set(mig) == MIG_DEVICES
    assert {d["nodeName"] for d in mig.values()} == {"gpu-node-1"}
    assert mig["gpu-0-mig-3g-20gb-4"]["consumesCounters"] == [
        {
            "counterSet": "gpu-0-counter-set",
            "counters": {
                **{f"memory-slice-{i}": {"value": "1"} for i in range(4, 8)},
                "multiprocessors": {"value": "42"},
                "memory": {"value": "20Gi"},
            },
        }
    ]
    assert nics["nic-0"]["attributes"][PCIE_ROOT] == {"strings": ["pci0000:00", "pci0000:40"]}
    assert nics["nic-0"]["attributes"]["linkSpeedsGbps"] == {"ints": [100, 200, 400]}
    assert nics["nic-1"]["attributes"]["firmwareVersions"] == {"versions": ["28.41.1000"]}
    counter_slice = json.loads(
        server.kubectl(
            "get", "resourceslice", "gpu-node-1-gpu.nvidia.com-counters", "-o", "json"
        ).stdout
    )["spec"]
    assert "devices" not in counter_slice
    assert [s["name"] for s in counter_slice["sharedCounters"]] == ["gpu-0-counter-set"]


# -- MIG in the 1.35 layout ----------------------------------------------------------------


def test_a_mig_device_taken_makes_the_whole_gpu_unavailable_and_back(
    server: ServerProcess,
) -> None:
    wait_counts(server, MIG_POOL, (15, 0, 15, 0))
    whole = [request("gpu", "gpu.nvidia.com")]
    assert chosen(review(server, whole, "gpu-node-1")) == {"gpu": {"gpu-0"}}

    claim = take(server, "mig.nvidia.com", "gpu.nvidia.com", "gpu-node-1", "gpu-0-mig-1g-5gb-0")
    # 1g.5gb at memory slice 0 taken: the whole GPU, 7g.40gb, 4g.20gb@0, 3g.20gb@0 and
    # 2g.10gb@0 overlap it (5 unavailable); 1g.5gb@1-6, 2g.10gb@2, 2g.10gb@4 and 3g.20gb@4
    # are still free (9).
    wait_counts(server, MIG_POOL, (15, 1, 9, 5))
    entry = pool_status_request(server, "gpu.nvidia.com")["gpu-node-1"]
    assert tuple(entry[k] for k in COUNTS) == (15, 1, 9, 5)
    assert entry["sliceCount"] == 2
    assert not entry.get("validationErrors")

    refused = review(server, whole, "gpu-node-1")
    assert refused["feasible"] is False
    assert refused["reasons"]
    big = [request("mig", "mig.nvidia.com", profile("3g.20gb"))]
    assert chosen(review(server, big, "gpu-node-1")) == {"mig": {"gpu-0-mig-3g-20gb-4"}}
    six = [request("mig", "mig.nvidia.com", profile("1g.5gb"), count=6)]
    assert chosen(review(server, six, "gpu-node-1")) == {
        "mig": {f"gpu-0-mig-1g-5gb-{s}" for s in range(1, 7)}
    }
    seven = [request("mig", "mig.nvidia.com", profile("1g.5gb"), count=7)]
    assert review(server, seven, "gpu-node-1")["feasible"] is False

    release(server, claim)
    wait_counts(server, MIG_POOL, (15, 0, 15, 0))
    assert chosen(review(server, whole, "gpu-node-1")) == {"gpu": {"gpu-0"}}
    assert chosen(review(server, seven, "gpu-node-1"))["mig"] == {
        f"gpu-0-mig-1g-5gb-{s}" for s in range(7)
    }


def test_the_whole_gpu_taken_makes_every_mig_device_unavailable(server: ServerProcess) -> None:
    wait_counts(server, MIG_POOL, (15, 0, 15, 0))
    claim = take(server, "gpu.nvidia.com", "gpu.nvidia.com", "gpu-node-1", "gpu-0")
    wait_counts(server, MIG_POOL, (15, 1, 0, 14))
    any_mig = [request("mig", "mig.nvidia.com")]
    assert review(server, any_mig, "gpu-node-1")["feasible"] is False
    release(server, claim)
    wait_counts(server, MIG_POOL, (15, 0, 15, 0))
    assert review(server, any_mig, "gpu-node-1")["feasible"] is True


# -- the example driver's partitions -------------------------------------------------------


def test_example_driver_partitions(server: ServerProcess) -> None:
    whole = 'device.attributes["gpu.example.com"].partition == "whole"'
    wait_counts(server, EXAMPLE_POOL, (6, 0, 6, 0))
    claim = take(server, "gpu.example.com", "gpu.example.com", "gpu-node-2", "gpu-0-partition-0")
    # gpu-0 (whole) no longer fits its counter set; gpu-0-partition-1 and all of gpu-1 do.
    wait_counts(server, EXAMPLE_POOL, (6, 1, 4, 1))
    entry = pool_status_request(server, "gpu.example.com")["gpu-node-2"]
    assert tuple(entry[k] for k in COUNTS) == (6, 1, 4, 1)
    one = [request("gpu", "gpu.example.com", whole)]
    assert chosen(review(server, one, "gpu-node-2")) == {"gpu": {"gpu-1"}}
    two = [request("gpu", "gpu.example.com", whole, count=2)]
    assert review(server, two, "gpu-node-2")["feasible"] is False
    release(server, claim)
    wait_counts(server, EXAMPLE_POOL, (6, 0, 6, 0))
    assert chosen(review(server, two, "gpu-node-2")) == {"gpu": {"gpu-0", "gpu-1"}}


# -- list-type attributes ------------------------------------------------------------------


def test_list_attributes_in_selectors_and_constraints(server: ServerProcess) -> None:
    wait_counts(server, MIG_POOL, (15, 0, 15, 0))
    # The A100 sits on PCIe root pci0000:80; only nic-1's list of roots holds it.
    gpu_and_nic = [request("gpu", "gpu.nvidia.com"), request("nic", "nic.example.com")]
    same_root = [{"requests": ["gpu", "nic"], "matchAttribute": PCIE_ROOT}]
    assert chosen(review(server, gpu_and_nic, "gpu-node-1", same_root)) == {
        "gpu": {"gpu-0"},
        "nic": {"nic-1"},
    }
    includes = 'device.attributes["resource.kubernetes.io"].pcieRoot.includes("pci0000:40")'
    assert chosen(review(server, [request("nic", "nic.example.com", includes)], "gpu-node-1")) == {
        "nic": {"nic-0"}
    }
    two_nics = [request("nic", "nic.example.com", count=2)]
    # Their roots are disjoint, their offloads share tso and gro.
    distinct_roots = [{"distinctAttribute": PCIE_ROOT}]
    assert chosen(review(server, two_nics, "gpu-node-1", distinct_roots)) == {
        "nic": {"nic-0", "nic-1"}
    }
    distinct_offloads = [{"distinctAttribute": "nic.example.com/offloads"}]
    assert review(server, two_nics, "gpu-node-1", distinct_offloads)["feasible"] is False
    common_offloads = [{"matchAttribute": "nic.example.com/offloads"}]
    assert review(server, two_nics, "gpu-node-1", common_offloads)["feasible"] is True
    speeds = 'device.attributes["nic.example.com"].linkSpeedsGbps.exists(s, s >= 400)'
    assert chosen(review(server, [request("nic", "nic.example.com", speeds)], "gpu-node-1")) == {
        "nic": {"nic-0"}
    }


# -- the counter slice may arrive later ----------------------------------------------------


def _slice(driver: str, name: str, count: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-{driver}"},
        "spec": {
            "driver": driver,
            "pool": {"name": "gpu-node-2", "generation": 1, "resourceSliceCount": count},
            "nodeName": "gpu-node-2",
            **spec,
        },
    }


def _status(server: ServerProcess, pool: str) -> dict[str, Any] | None:
    with server.client() as client:
        resp = client.get(f"{POOLS}/{pool}")
    return dict(resp.json()["status"]) if resp.status_code == 200 else None


def test_devices_published_before_their_counter_slice(server: ServerProcess) -> None:
    """A device slice that consumes a counter set no slice of its pool defines yet is stored
    (not refused); the pool is incomplete until the counter slice comes, then counts; a
    counter slice naming another set leaves the pool invalid, with the reason."""
    driver = f"{unique('late')}.example.com"
    pool = f"{driver}.gpu-node-2"
    memory = {"memory": {"value": "80Gi"}}
    devices = [
        {"name": "gpu-0", "consumesCounters": [{"counterSet": "gpu-0", "counters": memory}]},
        {
            "name": "gpu-0-half",
            "consumesCounters": [
                {"counterSet": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}
            ],
        },
    ]
    server.kubectl(
        "create", "-f", "-", input=json.dumps(_slice(driver, "devices", 2, devices=devices))
    )
    wait_for(lambda: (s := _status(server, pool)) is not None and s.get("incomplete"), "incomplete")
    wrong = _slice(driver, "counters", 2, sharedCounters=[{"name": "gpu-9", "counters": memory}])
    server.kubectl("create", "-f", "-", input=json.dumps(wrong))

    def invalid() -> dict[str, Any] | None:
        status = _status(server, pool)
        complete = status is not None and not status.get("incomplete")
        return status if complete and status.get("validationErrors") else None

    status = wait_for(invalid, "the pool complete and reported invalid")
    assert status["validationErrors"] == [
        "pool gpu-node-2: devices gpu-0, gpu-0-half consume counter set gpu-0, which the"
        " pool does not define"
    ]

    fixed = _slice(driver, "counters", 2, sharedCounters=[{"name": "gpu-0", "counters": memory}])
    server.kubectl("apply", "-f", "-", input=json.dumps(fixed))
    wait_for(
        lambda: (
            (s := _status(server, pool)) is not None
            and not s.get("validationErrors")
            and tuple(s[k] for k in COUNTS) == (2, 0, 2, 0)
        ),
        "the pool valid and counted",
    )


def test_bad_list_attributes_are_a_status_naming_the_field(server: ServerProcess) -> None:
    """An empty list, a list element too long, 49 attribute values on a device: 422 with
    the field of each, and nothing stored."""
    name = unique("bad-lists")
    body = _slice(
        f"{name}.example.com",
        name,
        1,
        devices=[
            {
                "name": "nic-0",
                "attributes": {
                    "empty": {"ints": []},
                    "roots": {"strings": ["ok", "x" * 65]},
                    "many": {"ints": list(range(48))},
                },
            }
        ],
    )
    with server.client() as client:
        resp = client.post(f"/apis/{GROUP}/v1/resourceslices", json=body)
        assert resp.status_code == 422, resp.text
        status = resp.json()
        assert status["kind"] == "Status"
        assert status["reason"] == "Invalid"
        assert sorted(c["field"] for c in status["details"]["causes"]) == [
            "spec.devices[0].attributes",
            "spec.devices[0].attributes[empty].ints",
            "spec.devices[0].attributes[roots].strings[1]",
        ]
        stored = client.get(f"/apis/{GROUP}/v1/resourceslices/{body['metadata']['name']}")
        assert stored.status_code == 404

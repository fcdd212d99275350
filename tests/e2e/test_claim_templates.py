"""Pods with claim templates on a laptop, every part a real process over HTTPS: the
server (whose ResourceClaim controller makes the claims), the scheduler shim and the
stand-in scheduler.

One node has one GPU. The first pod's claim is made from its template, allocated and the
pod bound; the second pod waits, and a FailedScheduling Event on it says why; once the
first pod is deleted its claim is deallocated and deleted, and the second pod gets the GPU.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from apiserver.toolkit import JSON
from devtools.waiting import wait_for

from .harness import SchedulerProcess, ServerProcess, ShimProcess, start_server, start_shim
from .objects import unique

NS = "default"
DRIVER = "gpu.example.com"
SCHEDULER = "dra-extension-scheduler"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = start_server(tmp_path_factory.mktemp("templates"), ["--bookmark-interval", "1"])
    proc.kubectl(
        "apply",
        "-f",
        "-",
        input=yaml.safe_dump_all(
            [
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "DeviceClass",
                    "metadata": {"name": DRIVER},
                    "spec": {
                        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]
                    },
                },
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": "node-1-gpus"},
                    "spec": {
                        "driver": DRIVER,
                        "nodeName": "node-1",
                        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": "gpu-0"}],
                    },
                },
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaimTemplate",
                    "metadata": {"name": "one-gpu", "namespace": NS},
                    "spec": {
                        "spec": {
                            "devices": {
                                "requests": [
                                    {"name": "gpu", "exactly": {"deviceClassName": DRIVER}}
                                ]
                            }
                        }
                    },
                },
            ]
        ),
    )
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def scheduler(
    server: ServerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SchedulerProcess]:
    shim: ShimProcess = start_shim(server, tmp_path_factory.mktemp("templates-shim"))
    args = ["--initial-backoff", "0.2", "--max-backoff", "1"]
    proc = SchedulerProcess(shim, shim.workdir, args).start()
    yield proc
    proc.stop()
    shim.stop()


def _get(server: ServerProcess, path: str) -> JSON | None:
    with server.client() as client:
        answer = client.get(path)
    if answer.status_code == 404:
        return None
    assert answer.status_code == 200, answer.text
    found: JSON = answer.json()
    return found


def _pod(server: ServerProcess, name: str) -> JSON:
    pod = _get(server, f"/api/v1/namespaces/{NS}/pods/{name}")
    assert pod is not None
    return pod


def _claim(server: ServerProcess, name: str) -> JSON | None:
    return _get(server, f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims/{name}")


def _create_pod(server: ServerProcess) -> str:
    name = unique("trainer")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "schedulerName": SCHEDULER,
            "containers": [{"name": "main", "image": "busybox"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        },
    }
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(pod))
    return name


def _bound(server: ServerProcess, pod: str) -> str:
    node: str = wait_for(
        lambda: _pod(server, pod)["spec"].get("nodeName"), f"pod {pod} to be bound", timeout=60
    )
    return node


def _claim_of(server: ServerProcess, pod: str) -> str:
    def named() -> str | None:
        statuses = _pod(server, pod).get("status", {}).get("resourceClaimStatuses")
        return statuses[0]["resourceClaimName"] if statuses else None

    claim: str = wait_for(named, f"pod {pod} to name its claim")
    return claim


def _failed_scheduling(server: ServerProcess, pod: str) -> list[JSON]:
    listed = server.kubectl(
        "get",
        "events",
        "-n",
        NS,
        "--field-selector",
        f"involvedObject.kind=Pod,involvedObject.name={pod},reason=FailedScheduling",
        "-o",
        "yaml",
    )
    items: list[JSON] = yaml.safe_load(listed.stdout)["items"]
    return items


@pytest.mark.usefixtures("scheduler")
def test_a_templated_claim_is_made_allocated_and_goes_with_its_pod(server: ServerProcess) -> None:
    first = _create_pod(server)
    assert _bound(server, first) == "node-1"
    claim_name = _claim_of(server, first)
    assert claim_name.startswith(f"{first}-gpu-")
    claim = _claim(server, claim_name)
    assert claim is not None
    [owner] = claim["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("Pod", first)
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert (result["pool"], result["device"]) == ("node-1", "gpu-0")
    assert [r["name"] for r in claim["status"]["reservedFor"]] == [first]

    second = _create_pod(server)
    second_claim = _claim_of(server, second)
    [event] = wait_for(lambda: _failed_scheduling(server, second), "a FailedScheduling Event")
    assert event["type"] == "Warning"
    assert event["source"]["component"] == SCHEDULER
    assert "0/1 nodes are available" in event["message"]
    assert _pod(server, second)["spec"].get("nodeName") is None
    stored = _claim(server, second_claim)
    assert stored is not None
    assert "allocation" not in stored.get("status", {})

    server.kubectl("delete", "pod", first, "-n", NS)
    wait_for(lambda: _claim(server, claim_name) is None, "the first pod's claim to be deleted")
    assert _bound(server, second) == "node-1"
    moved = _claim(server, second_claim)
    assert moved is not None
    [result] = moved["status"]["allocation"]["devices"]["results"]
    assert result["device"] == "gpu-0"  # the one GPU, free again

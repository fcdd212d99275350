"""Manifests (claims, pods, patches, pool status requests), unique names, a claim and pod
created together, and a line reader shared by the end-to-end test modules."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import uuid
from collections.abc import Callable
from typing import IO, Any

from .harness import ServerProcess, kubectl_binary

GROUP = "resource.k8s.io"
RSP_VERSION = "v1alpha3"
RPSR_VERSION = "v1alpha1"
RSP_PATH = f"/apis/{GROUP}/{RSP_VERSION}/resourceslicepatches"
RPSR_PATH = f"/apis/{GROUP}/{RPSR_VERSION}/resourcepoolstatusrequests"
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"
METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
MERGE_PATCH = "application/merge-patch+json"


def unique(prefix: str) -> str:
    """A DNS-1123 name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def node_slice(
    name: str, driver: str, node: str, devices: list[dict[str, Any]], pool: str | None = None
) -> dict[str, Any]:
    """The one ResourceSlice of ``pool`` (by default named after the node), on ``node``."""
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "pool": {"name": pool or node, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": devices,
        },
    }


def node_pool_docs(driver: str, node: str, pool: str, devices: int) -> list[dict[str, Any]]:
    """A DeviceClass of every device of ``driver`` (named after it), the Node ``node`` and
    one slice of ``pool`` on it with ``devices`` devices ``dev-0``, ``dev-1``, ..."""
    return [
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "DeviceClass",
            "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        },
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}},
        node_slice(pool, driver, node, [{"name": f"dev-{i}"} for i in range(devices)], pool),
    ]


def claim_object(
    name: str, *requests: dict[str, Any], namespace: str = "default"
) -> dict[str, Any]:
    """A ResourceClaim asking for ``requests``."""
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": list(requests)}},
    }


def pod_object(
    name: str, claim: str, *, ref: str = "gpu", namespace: str = "default", **spec: Any
) -> dict[str, Any]:
    """A Pod of one busybox container that uses the ResourceClaim ``claim`` as ``ref``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            **spec,
            "containers": [{"name": "main", "image": "busybox"}],
            "resourceClaims": [{"name": ref, "resourceClaimName": claim}],
        },
    }


def create_pod_with_claim(
    server: ServerProcess, request: dict[str, Any], *, namespace: str = "default", **spec: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A claim for ``request`` and a pod using it (under the request's name), created over
    the API under unique names: (pod, claim) as the server answered them."""
    claim, pod = unique("claim"), unique("pod")
    with server.client() as client:
        made = client.post(
            f"/apis/{GROUP}/v1/namespaces/{namespace}/resourceclaims",
            json=claim_object(claim, request, namespace=namespace),
        )
        assert made.status_code == 201, made.text
        created = client.post(
            f"/api/v1/namespaces/{namespace}/pods",
            json=pod_object(pod, claim, ref=request["name"], namespace=namespace, **spec),
        )
        assert created.status_code == 201, created.text
    return created.json(), made.json()


def write_allocation(server: ServerProcess, claim: str, allocation: dict[str, Any]) -> None:
    """What a scheduler does once it has picked devices: write ``allocation`` as the status
    of the claim ``claim`` (in the default namespace), with kubectl."""
    server.kubectl(
        "patch",
        f"resourceclaim/{claim}",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"allocation": allocation}}),
    )


def pool_status(server: ServerProcess, driver: str, pool: str) -> dict[str, Any]:
    """The entry of ``pool`` in a fresh ResourcePoolStatusRequest, once it is Complete."""
    name = unique(pool)
    server.kubectl("create", "-f", "-", input=json.dumps(rpsr(name, driver, poolName=pool)))
    server.kubectl("wait", "--for=condition=Complete", f"rpsr/{name}", "--timeout=30s")
    status = json.loads(server.kubectl("get", f"rpsr/{name}", "-o", "json").stdout)["status"]
    [entry] = status["pools"]
    return dict(entry)


def bind_args(pod: dict[str, Any], node: str) -> dict[str, str]:
    """The extender's bind arguments (kube-scheduler's spelling) for a stored pod."""
    meta = pod["metadata"]
    return {
        "PodName": meta["name"],
        "PodNamespace": meta["namespace"],
        "PodUID": meta["uid"],
        "Node": node,
    }


def rsp(name: str, priority: int = 5, **devices: Any) -> dict[str, Any]:
    """A valid ResourceSlicePatch."""
    return {
        "apiVersion": f"{GROUP}/{RSP_VERSION}",
        "kind": "ResourceSlicePatch",
        "metadata": {"name": name},
        "spec": {"devices": {"priority": priority, **devices}},
    }


def rpsr(name: str, driver: str = "example.com/gpu", **spec: Any) -> dict[str, Any]:
    """A valid ResourcePoolStatusRequest."""
    return {
        "apiVersion": f"{GROUP}/{RPSR_VERSION}",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": {"driver": driver, **spec},
    }


def is_status(body: Any, code: int | None = None) -> bool:
    """True if ``body`` is a ``v1 Status`` (with ``code``, if given)."""
    return (
        isinstance(body, dict)
        and body.get("kind") == "Status"
        and body.get("apiVersion") == "v1"
        and (code is None or body.get("code") == code)
    )


def assert_read_only(
    server: ServerProcess, group: str, plural: str, writes: tuple[tuple[str, str], ...]
) -> None:
    """A computed kind: discovery offers get, list and watch only; ``kubectl delete`` and
    every write in ``writes`` (method, path) are 405 MethodNotAllowed ``Status``es."""
    out = server.kubectl("api-resources", "--api-group", group, "-o", "wide").stdout
    row = next(line.split() for line in out.splitlines() if line.startswith(f"{plural} "))
    assert row[-1] == "get,list,watch"
    failed = server.kubectl("delete", plural, "anything", check=False)
    assert failed.returncode != 0
    assert "MethodNotAllowed" in failed.stderr
    with server.client() as client:
        for method, path in writes:
            resp = client.request(
                method,
                path,
                content=b"{}",
                headers={"Content-Type": "application/merge-patch+json"},
            )
            assert resp.status_code == 405, (method, resp.text)
            assert is_status(resp.json(), 405)
            assert resp.json()["reason"] == "MethodNotAllowed"


class LineReader:
    """Reads a pipe of a running process on a thread, so tests can wait for lines with a timeout."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 30.0) -> str:
        """The next line satisfying ``predicate``; AssertionError if the stream ends or stalls."""
        while True:
            try:
                line = self._queue.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(
                    f"no matching line within {timeout}s; got {self.lines!r}"
                ) from None
            if line is None:
                raise AssertionError(f"stream ended without a matching line; got {self.lines!r}")
            self.lines.append(line)
            if predicate(line):
                return line

    def drain(self, timeout: float = 30.0) -> list[str]:
        """Every line up to the end of the stream (the process has exited)."""
        while True:
            try:
                line = self._queue.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"the stream did not end; got {self.lines!r}") from None
            if line is None:
                return self.lines
            self.lines.append(line)


def kubectl_popen(
    server: ServerProcess, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start kubectl against ``server`` without waiting for it (for ``wait``, ``get -w``, ``delete``)."""
    env = {
        **os.environ,
        "KUBECONFIG": str(server.kubeconfig),
        "HOME": str(server.workdir),
        **(env or {}),
    }
    return subprocess.Popen(
        [kubectl_binary(), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def stop(proc: subprocess.Popen[str]) -> None:
    """End a process this test started, waiting for it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

"""Concurrent binds through the scheduler shim process, as kube-scheduler sends them: every
pod has a claim for one device of one node, and all are bound at once. No device ends in
two claims, every free device is used, each bound pod's claim holds its device and every
unbound pod's claim holds none. A repeated Bind of a bound pod succeeds and changes
nothing, neither the pod nor its claim."""

from __future__ import annotations

import concurrent.futures
import itertools
from typing import Any

import pytest
import yaml

from . import test_shim_process as shim_process
from .harness import ServerProcess, ShimProcess
from .objects import bind_args, claim_object, node_pool_docs, pod_object

# The shim and its server as kube-scheduler meets them: that module's fixtures.
tokens = shim_process.tokens
server = shim_process.server
shim = shim_process.shim

GROUP = "resource.k8s.io"
DRIVER = "bind.example.com"
NAMESPACE = "default"
_rounds = itertools.count()


def _docs(round_: int, pods: int, devices: int) -> tuple[str, list[dict[str, Any]]]:
    """A node with a pool of ``devices``, and ``pods`` pods each with a claim for one."""
    node = f"bind-node-{round_}"
    request = {"name": "one", "exactly": {"deviceClassName": DRIVER}}
    docs = node_pool_docs(DRIVER, node, f"bind-pool-{round_}", devices)
    for i in range(pods):
        name = f"bind-{round_}-{i}"
        docs += [
            claim_object(name, request, namespace=NAMESPACE),
            pod_object(name, name, ref="one", namespace=NAMESPACE),
        ]
    return node, docs


def _get(server: ServerProcess, path: str) -> dict[str, Any]:
    with server.client() as client:
        answer = client.get(path)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def _pod(server: ServerProcess, name: str) -> dict[str, Any]:
    return _get(server, f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")


def _claim(server: ServerProcess, name: str) -> dict[str, Any]:
    return _get(server, f"/apis/{GROUP}/v1/namespaces/{NAMESPACE}/resourceclaims/{name}")


def _bind(shim: ShimProcess, pod: dict[str, Any], node: str) -> dict[str, Any]:
    with shim.client() as client:
        answer = client.post("/bind", json=bind_args(pod, node), timeout=120)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def _devices(claim: dict[str, Any]) -> list[str]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return [r["device"] for r in (allocation.get("devices") or {}).get("results") or []]


@pytest.mark.parametrize(("pods", "devices"), [(24, 24), (40, 40), (50, 10), (30, 50), (50, 50)])
def test_concurrent_binds_never_share_a_device_and_use_every_free_one(
    server: ServerProcess, shim: ShimProcess, pods: int, devices: int
) -> None:
    round_ = next(_rounds)
    node, docs = _docs(round_, pods, devices)
    server.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
    names = [f"bind-{round_}-{i}" for i in range(pods)]
    stored = [_pod(server, n) for n in names]

    with concurrent.futures.ThreadPoolExecutor(pods) as pool:
        answers = list(pool.map(lambda p: _bind(shim, p, node), stored))

    bound = {n for n, a in zip(names, answers, strict=True) if a["Error"] == ""}
    assert len(bound) == min(pods, devices), [a["Error"] for a in answers if a["Error"]]
    held: list[str] = []
    for name in names:
        pod, claim = _pod(server, name), _claim(server, name)
        got = _devices(claim)
        if name in bound:
            assert pod["spec"]["nodeName"] == node
            assert len(got) == 1
            users = claim["status"]["reservedFor"]
            assert [u["uid"] for u in users] == [pod["metadata"]["uid"]]
            held += got
        else:
            assert not pod["spec"].get("nodeName")
            assert got == [], claim["status"]
    assert len(set(held)) == len(held), sorted(held)  # no device in two claims
    assert len(set(held)) == min(pods, devices)  # every free device used, as far as wanted


def test_a_repeated_bind_succeeds_and_changes_nothing(
    server: ServerProcess, shim: ShimProcess
) -> None:
    round_ = next(_rounds)
    node, docs = _docs(round_, 1, 2)
    server.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
    name = f"bind-{round_}-0"
    pod = _pod(server, name)
    assert _bind(shim, pod, node) == {"Error": ""}
    bound_pod, bound_claim = _pod(server, name), _claim(server, name)
    assert bound_pod["spec"]["nodeName"] == node
    assert len(_devices(bound_claim)) == 1

    for _ in range(3):  # kube-scheduler retrying a bind whose answer it did not get
        assert _bind(shim, pod, node) == {"Error": ""}
    assert _pod(server, name) == bound_pod
    assert _claim(server, name) == bound_claim

    elsewhere = _bind(shim, pod, f"{node}-other")
    assert f'already assigned to node "{node}"' in elsewhere["Error"]
    assert _pod(server, name) == bound_pod
    assert _claim(server, name) == bound_claim

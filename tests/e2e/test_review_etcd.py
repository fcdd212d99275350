"""AllocationReviews on the etcd the dev extras install (3.5.1, which cannot order progress
notifications after pending events): two server processes share it, and a review on either
answers 201 right after a write made through either, and sees that write."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from apiserver.storage.etcd import progress_is_ordered
from devtools.localetcd import LocalEtcd

from .harness import REPO, ServerProcess, start_server

GROUP = "resource.k8s.io"
PATH = f"/apis/{GROUP}/v1alpha3/allocationreviews"
ROUNDS = 4


@pytest.fixture(scope="module")
def replicas(
    tmp_path_factory: pytest.TempPathFactory, etcd: LocalEtcd
) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    workdir = tmp_path_factory.mktemp("review-etcd")
    args = ["--etcd-prefix", "/review-etcd", "--bookmark-interval", "1"]
    a = start_server(workdir / "a", args, storage=etcd.url)
    try:
        b = start_server(workdir / "b", args, storage=etcd.url)
    except BaseException:
        a.stop()
        raise
    for name in ("00-deviceclasses.yaml", "05-nodes.yaml"):
        a.kubectl("apply", "-f", str(REPO / "examples" / name))
    yield a, b
    a.stop()
    b.stop()


def model_slice(node: str, model: str) -> dict[str, Any]:
    name = f"{node}-{model}"
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": model}}}],
        },
    }


def review_of(model: str) -> dict[str, Any]:
    selector = f'device.attributes["gpu.example.com"].model == "{model}"'
    exactly = {
        "deviceClassName": "gpu.example.com",
        "count": 1,
        "selectors": [{"cel": {"expression": selector}}],
    }
    claim = {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}
    return {
        "apiVersion": f"{GROUP}/v1alpha3",
        "kind": "AllocationReview",
        "spec": {"claims": [{"name": model, "spec": claim}], "nodeNames": ["node-1", "node-2"]},
    }


def test_the_installed_etcd_cannot_order_progress_notifications(etcd: LocalEtcd) -> None:
    """The premise of the next test: it runs on an etcd where progress notifications prove
    nothing, so the reviews below depend on the fallback."""
    version = httpx.get(f"http://{etcd.endpoint}/version").json()["etcdserver"]
    assert not progress_is_ordered(version), version


def test_reviews_answer_right_after_a_write_on_either_replica(
    replicas: tuple[ServerProcess, ServerProcess],
) -> None:
    a, b = replicas
    with a.client() as via_a, b.client() as via_b:
        for i in range(ROUNDS):
            writer, reviewer = (via_a, via_b) if i % 2 == 0 else (via_b, via_b)
            model = f"etcd-model-{i}"
            node = "node-1" if i % 2 == 0 else "node-2"
            # The write is to ResourceSlices; the review needs every other kind's cache too
            # (classes, claims, nodes...), idle since the write, to prove it caught up.
            written = writer.post(f"/apis/{GROUP}/v1/resourceslices", json=model_slice(node, model))
            assert written.status_code == 201, written.text
            answer = reviewer.post(PATH, json=review_of(model))
            assert answer.status_code == 201, answer.text
            nodes = {n["nodeName"]: n for n in answer.json()["status"]["nodes"]}
            assert nodes[node]["feasible"] is True, nodes  # the write just made is seen
            other = "node-2" if node == "node-1" else "node-1"
            assert nodes[other]["feasible"] is False
            # And a write to another kind only, then a review at once.
            ns = via_a.post(
                "/api/v1/namespaces",
                json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{i}"}},
            )
            assert ns.status_code == 201, ns.text
            again = reviewer.post(PATH, json=review_of(model))
            assert again.status_code == 201, again.text
    listed = a.kubectl("get", "resourceslices", "-o", "yaml").stdout
    names = {item["metadata"]["name"] for item in yaml.safe_load(listed)["items"]}
    assert {f"node-{1 + i % 2}-etcd-model-{i}" for i in range(ROUNDS)} <= names  # no marks


def test_many_reviews_at_once_on_both_replicas_right_after_writes(
    replicas: tuple[ServerProcess, ServerProcess],
) -> None:
    """Each round: a write through one replica, then 24 reviews at once split over both,
    each needing every idle kind's cache to prove it caught up; all answer 201 and see it."""
    a, b = replicas

    def ask(server: ServerProcess, model: str) -> tuple[int, bool]:
        with server.client() as client:
            answer = client.post(PATH, json=review_of(model))
            if answer.status_code != 201:
                return answer.status_code, False
            nodes = answer.json()["status"]["nodes"]
            return 201, any(n["feasible"] for n in nodes if n["nodeName"] == "node-1")

    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        for round_ in range(3):
            model = f"crowd-model-{round_}"
            writer = a if round_ % 2 == 0 else b
            with writer.client() as client:
                written = client.post(
                    f"/apis/{GROUP}/v1/resourceslices", json=model_slice("node-1", model)
                )
                assert written.status_code == 201, written.text
            answers = list(pool.map(ask, [a, b] * 12, [model] * 24))
            assert answers == [(201, True)] * 24, answers

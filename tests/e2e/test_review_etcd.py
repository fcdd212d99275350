"""AllocationReviews on the etcd the dev extras install (3.5.1, which cannot order progress
notifications after pending events): two server processes share it, and a review on either
answers 201 right after a write made through either, and sees that write."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
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


@pytest.fixture
def replicas(tmp_path: Path, etcd: LocalEtcd) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    args = ["--etcd-prefix", "/review-etcd", "--bookmark-interval", "1"]
    a = start_server(tmp_path / "a", args, storage=etcd.url)
    try:
        b = start_server(tmp_path / "b", args, storage=etcd.url)
    except BaseException:
        a.stop()
        raise
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
    for name in ("00-deviceclasses.yaml", "05-nodes.yaml"):
        a.kubectl("apply", "-f", str(REPO / "examples" / name))
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

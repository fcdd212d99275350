"""The scheduler shim as kube-scheduler meets it: a separate process serving HTTPS with
its own certificate, reading the server with a kubeconfig. A pod without claims passes
filter everywhere (Nodes or NodeNames), gets no scores, and /bind binds it through
``pods/binding`` (kubectl shows the node); a second bind is the server's conflict in the
protocol's ``Error``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from .harness import ServerProcess, ShimProcess, start_shim
from .objects import unique


@pytest.fixture(scope="module")
def shim(server: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShimProcess]:
    proc = start_shim(server, tmp_path_factory.mktemp("shim"))
    yield proc
    proc.stop()


def _pod(server: ServerProcess) -> dict[str, object]:
    name = unique("plain")
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    with server.client() as client:
        stored: dict[str, object] = client.get(f"/api/v1/namespaces/default/pods/{name}").json()
    return stored


def test_filter_and_prioritize_of_a_pod_without_claims(
    server: ServerProcess, shim: ShimProcess
) -> None:
    pod = _pod(server)
    nodes = [{"metadata": {"name": n}} for n in ("node-1", "node-2")]
    with shim.client() as client:
        by_name = client.post("/filter", json={"Pod": pod, "Nodes": None, "NodeNames": ["node-1"]})
        by_node = client.post("/filter", json={"Pod": pod, "Nodes": {"items": nodes}})
        scores = client.post("/prioritize", json={"Pod": pod, "NodeNames": ["node-1", "node-2"]})
    assert by_name.json() == {
        "Nodes": None,
        "NodeNames": ["node-1"],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }
    assert [n["metadata"]["name"] for n in by_node.json()["Nodes"]["items"]] == ["node-1", "node-2"]
    assert by_node.json()["NodeNames"] is None
    assert scores.json() == [{"Host": "node-1", "Score": 0}, {"Host": "node-2", "Score": 0}]


def test_bind_binds_the_pod_once(server: ServerProcess, shim: ShimProcess) -> None:
    pod = _pod(server)
    meta = pod["metadata"]
    assert isinstance(meta, dict)
    args = {
        "PodName": meta["name"],
        "PodNamespace": "default",
        "PodUID": meta["uid"],
        "Node": "node-7",
    }
    with shim.client() as client:
        first = client.post("/bind", json=args)
        second = client.post("/bind", json={**args, "Node": "node-8"})
    assert first.status_code == 200
    assert first.json() == {"Error": ""}
    assert 'already assigned to node "node-7"' in second.json()["Error"]

    wide = server.kubectl("get", "pod", meta["name"], "-o", "wide").stdout.splitlines()
    assert wide[1].split()[wide[0].split().index("NODE")] == "node-7"

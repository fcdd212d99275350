"""Bounded AllocationReviews through the real server: one search budget for the whole review
(a combinatorial claim over 40 nodes that all reach one 64-device pool), the nodes it did
not reach answered NotSearched, other requests served meanwhile, too many node names
refused with 422 naming spec.nodeNames (the limit documented for kubectl explain), and a
review whose client goes away stopped."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from apiserver.api.resource.allocationreview import NODES_MAX
from devtools.waiting import wait_for

from .harness import ServerProcess, start_server

GROUP = "resource.k8s.io"
PATH = f"/apis/{GROUP}/v1alpha3/allocationreviews"
DRIVER = "fabric.bounds.example.com"
NODES = [f"bounds-node-{i:02}" for i in range(40)]
DEVICES = 64
IMPOSSIBLE = f"devices.map(d, d.attributes['{DRIVER}'].id).sum() == -1"
"""No set of devices satisfies it and only a complete set can tell: a search through every
combination of 4 of 64 distinct devices, on every node."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # At info: the line that says a review was stopped is the evidence of the last test.
    proc = start_server(tmp_path_factory.mktemp("bounds"), ["--log-level", "info"])
    device_class = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    fabric = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "bounds-fabric"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": "bounds-fabric", "generation": 1, "resourceSliceCount": 1},
            "allNodes": True,
            "devices": [
                {"name": f"dev-{i}", "attributes": {"id": {"int": i}}} for i in range(DEVICES)
            ],
        },
    }
    proc.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([device_class, fabric]))
    yield proc
    proc.stop()


def combinatorial(nodes: list[str]) -> dict[str, Any]:
    exactly = {"deviceClassName": DRIVER, "count": 4}
    claim = {
        "devices": {
            "requests": [{"name": "four", "exactly": exactly}],
            "constraints": [{"cel": {"expression": IMPOSSIBLE}}],
        }
    }
    return {
        "apiVersion": f"{GROUP}/v1alpha3",
        "kind": "AllocationReview",
        "spec": {"claims": [{"name": "four", "spec": claim}], "nodeNames": nodes},
    }


def test_a_combinatorial_review_over_40_nodes_ends_within_its_budget(
    server: ServerProcess,
) -> None:
    """Before, each node had a budget of its own (40 of them for 40 nodes). Now the nodes
    share one: the first ones give up on their share, the rest are answered NotSearched,
    and the server answers other requests while the review searches."""
    review_done = threading.Event()
    served_meanwhile = 0

    def ask() -> httpx.Response:
        try:
            with server.client(timeout=120.0) as client:
                return client.post(PATH, json=combinatorial(NODES))
        finally:
            review_done.set()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pending = pool.submit(ask)
        with server.client() as other:
            while not review_done.is_set():
                listed = other.get(f"/apis/{GROUP}/v1/resourceslices/bounds-fabric")
                assert listed.status_code == 200
                if not review_done.is_set():
                    served_meanwhile += 1
        answer = pending.result()
    assert answer.status_code == 201, answer.text
    nodes = answer.json()["status"]["nodes"]
    assert sorted(n["nodeName"] for n in nodes) == NODES
    reasons: dict[str, list[str]] = {}
    for node in nodes:
        assert node["feasible"] is False
        # The fabric pool reaches every name; no Node objects are made for them.
        [reason] = [r for r in node["reasons"] if r["reason"] != "NodeNotFound"]
        reasons.setdefault(reason["reason"], []).append(node["nodeName"])
    assert set(reasons) == {"BudgetExhausted", "NotSearched"}, reasons
    assert 0 < len(reasons["BudgetExhausted"]) < len(NODES)
    skipped = next(n for n in nodes if n["nodeName"] in reasons["NotSearched"])
    assert any("search budget" in r["message"] for r in skipped["reasons"])
    assert served_meanwhile > 0  # the loop was never held for the whole search


def test_too_many_node_names_are_refused_naming_the_field(server: ServerProcess) -> None:
    names = [f"n-{i}" for i in range(NODES_MAX + 1)]
    with server.client() as client:
        answer = client.post(PATH, json=combinatorial(names))
        assert answer.status_code == 422, answer.text
        status = answer.json()
        assert status["reason"] == "Invalid"
        assert [c["field"] for c in status["details"]["causes"]] == ["spec.nodeNames"]
        assert str(NODES_MAX) in status["details"]["causes"][0]["message"]
        at_limit = client.post(PATH, json=combinatorial(names[:NODES_MAX]))
        # At the limit the review is taken (its budget bounds the search).
        assert at_limit.status_code == 201, at_limit.text[:500]
    explained = server.kubectl("explain", "allocationreviews.spec.nodeNames").stdout
    assert f"At most {NODES_MAX}" in " ".join(explained.split())


def test_a_review_whose_client_goes_away_stops_searching(server: ServerProcess) -> None:
    """The client gives up before the search could end; the server cancels the review (the
    line is logged only once its task has ended) and goes on answering."""
    logged_before = server.log.read_text(errors="replace").count("the client went away")
    with (
        server.client(timeout=httpx.Timeout(30.0, read=1.0)) as client,
        pytest.raises(httpx.ReadTimeout),
    ):
        client.post(PATH, json=combinatorial(NODES))

    def stopped() -> bool:
        text = server.log.read_text(errors="replace")
        return text.count("the client went away") > logged_before

    wait_for(stopped, "the server to stop the review of the client that went away")
    line = [
        ln
        for ln in server.log.read_text(errors="replace").splitlines()
        if "the client went away" in ln
    ][-1]
    assert f"POST allocationreviews.{GROUP}" in line
    with server.client() as client:
        assert client.get("/readyz").status_code == 200
        small = combinatorial(NODES[:1])
        small["spec"]["claims"][0]["spec"]["devices"].pop("constraints")
        answer = client.post(PATH, json=small)
        assert answer.status_code == 201
        assert answer.json()["status"]["nodes"][0]["feasible"] is True

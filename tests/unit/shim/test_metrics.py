"""The shim's own metrics, in process: the extender calls counted by verb and outcome as
/metrics serves them, the attach wait's outcomes; and the in-cluster credentials, whose
ServiceAccount token is read again from its file as it rotates."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import Response
from prometheus_client.parser import text_string_to_metric_families

from apiserver.kubeclient import (
    ClusterConfig,
    KubeClient,
    in_cluster_config,
    transport,
)
from apiserver.shim.metrics import ShimMetrics
from apiserver.shim.paths import Paths
from tests.unit.shim.inprocess import REVIEWS, shim_over

POD = {
    "metadata": {"name": "trainer", "namespace": "ml", "uid": "u-1"},
    "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "trainer-gpu"}]},
}


def below() -> FastAPI:
    """The allocation API: node-a fits, any other node has no candidates; reviews of a
    claim named ``broken`` fail."""
    app = FastAPI()

    @app.post(REVIEWS)
    async def review(request: Request) -> Response:
        body = orjson.loads(await request.body())
        if body["spec"]["claims"][0]["name"] == "broken":
            return Response(b'{"kind":"Status","reason":"InternalError"}', 500)
        reason = {"claim": "ml/trainer-gpu", "reason": "NoCandidates", "message": "none"}
        body["status"] = {
            "nodes": [
                {"nodeName": n, "feasible": True, "score": 80, "allocations": [{}]}
                if n == "node-a"
                else {"nodeName": n, "feasible": False, "reasons": [reason]}
                for n in body["spec"]["nodeNames"]
            ]
        }
        return Response(orjson.dumps(body), 201, media_type="application/json")

    return app


@pytest.fixture
async def shim() -> AsyncIterator[httpx.AsyncClient]:
    async with shim_over(below(), metrics=ShimMetrics()) as client:
        yield client


async def scrape(shim: httpx.AsyncClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample /metrics serves, by name and labels."""
    answer = await shim.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def calls(samples: dict[Any, float], verb: str, outcome: str) -> float:
    key = (
        "dra_scheduler_shim_extender_requests_total",
        (("outcome", outcome), ("verb", verb)),
    )
    return samples.get(key, 0.0)


async def test_extender_calls_are_counted_by_verb_and_outcome(shim: httpx.AsyncClient) -> None:
    before = await scrape(shim)
    assert calls(before, "filter", "ok") == 0

    fitted = await shim.post("/filter", json={"Pod": POD, "NodeNames": ["node-a", "node-b"]})
    assert fitted.json()["NodeNames"] == ["node-a"]
    refused = await shim.post("/filter", json={"NodeNames": ["node-a"]})
    assert refused.status_code == 400
    scored = await shim.post("/prioritize", json={"Pod": POD, "NodeNames": ["node-a"]})
    assert scored.json() == [{"Host": "node-a", "Score": 8}]
    broken = {**POD, "spec": {"resourceClaims": [{"name": "g", "resourceClaimName": "broken"}]}}
    failed = await shim.post("/filter", json={"Pod": broken, "NodeNames": ["node-a"]})
    assert "allocation review failed" in failed.json()["Error"]
    failed_scores = await shim.post("/prioritize", json={"Pod": broken, "NodeNames": ["node-a"]})
    assert failed_scores.status_code == 500

    after = await scrape(shim)
    assert calls(after, "filter", "ok") == 1
    assert calls(after, "filter", "bad_request") == 1
    assert calls(after, "filter", "error") == 1
    assert calls(after, "prioritize", "ok") == 1
    assert calls(after, "prioritize", "error") == 1
    assert calls(after, "bind", "ok") == 0
    latency = "dra_scheduler_shim_extender_request_duration_seconds_count"
    assert after[(latency, (("verb", "filter"),))] == 3
    assert after[(latency, (("verb", "prioritize"),))] == 2


async def test_a_bad_bind_is_counted(shim: httpx.AsyncClient) -> None:
    answer = await shim.post("/bind", json={"PodName": "p", "PodNamespace": "ml"})
    assert answer.status_code == 400
    assert calls(await scrape(shim), "bind", "bad_request") == 1


def waits(metrics: ShimMetrics, outcome: str) -> float:
    value = metrics.registry.get_sample_value(
        "dra_scheduler_shim_attach_waits_total", {"outcome": outcome}
    )
    return value or 0.0


async def test_attach_waits_are_counted_by_how_they_ended() -> None:
    metrics = ShimMetrics()

    with metrics.attach_wait():
        await asyncio.sleep(0)

    async def never_attached() -> None:
        with metrics.attach_wait():
            async with asyncio.timeout(0.01):
                await asyncio.Event().wait()

    def attach_failed() -> None:
        with metrics.attach_wait():
            raise RuntimeError("attach-failed")

    with pytest.raises(TimeoutError):
        await never_attached()
    with pytest.raises(RuntimeError):
        attach_failed()

    async def abandoned() -> None:
        with metrics.attach_wait():
            await asyncio.Event().wait()

    task = asyncio.create_task(abandoned())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    started = metrics.registry.get_sample_value("dra_scheduler_shim_attach_waits_started_total")
    assert started == 4
    assert [waits(metrics, o) for o in ("attached", "timed_out", "failed", "cancelled")] == [
        1,
        1,
        1,
        1,
    ]
    timed = metrics.registry.get_sample_value(
        "dra_scheduler_shim_attach_wait_duration_seconds_sum", {"outcome": "timed_out"}
    )
    assert timed is not None
    assert timed >= 0.01


async def test_in_cluster_credentials_read_the_rotating_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ca.crt").write_bytes(b"")
    (tmp_path / "token").write_text("first\n")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    monkeypatch.setattr(transport, "TOKEN_REREAD", 0.0)
    credentials = in_cluster_config(directory=tmp_path)
    assert credentials.server == "https://[fd00::1]:6443"

    seen: list[str] = []
    app = FastAPI()

    @app.get("/api/v1/namespaces/ml/pods/p")
    async def pod(request: Request) -> dict[str, str]:
        seen.append(request.headers["authorization"])
        return {"kind": "Pod"}

    # An empty CA file cannot be loaded; the in-process transport needs none.
    api = KubeClient(
        ClusterConfig("http://api", None, None, None, None, credentials.token_file),
        transport=httpx.ASGITransport(app),
    )
    await api.get(Paths.pod("ml", "p"))
    (tmp_path / "token").write_text("rotated\n")
    await api.get(Paths.pod("ml", "p"))
    await api.aclose()
    assert seen == ["Bearer first", "Bearer rotated"]


def test_outside_a_cluster_in_cluster_credentials_say_what_to_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ValueError, match="--kubeconfig"):
        in_cluster_config(directory=tmp_path)

"""The shim served in process over an in-process allocation API: what the shim's unit tests
share, so each test file writes only the API below it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from starlette.types import ASGIApp

from apiserver.kubeclient import ClusterConfig, KubeClient
from apiserver.shim.app import DirectVerbs, build_app
from apiserver.shim.metrics import ShimMetrics
from apiserver.shim.paths import Paths

REVIEWS = "/apis/resource.k8s.io/v1alpha3/allocationreviews"


@asynccontextmanager
async def shim_over(
    below: ASGIApp, metrics: ShimMetrics | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the shim's app whose API client reaches ``below`` in process."""
    api = KubeClient(
        ClusterConfig("http://api", None, "t", None, None), transport=httpx.ASGITransport(below)
    )
    app = DirectVerbs(build_app(api, Paths(), metrics=metrics))
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app), base_url="http://shim"
        ) as client:
            yield client
    finally:
        await api.aclose()

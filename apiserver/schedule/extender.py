"""The extender protocol from the scheduler's side: the JSON kube-scheduler sends to an
extender's ``filter``, ``prioritize`` and ``bind`` verbs over HTTPS, and what it reads back.

``ExtenderArgs`` carries the pod and the candidates as whole ``v1.Node`` objects in a
``NodeList`` (``nodeCacheCapable: false``, kube-scheduler's default) or as names
(``nodeCacheCapable: true``); the answer names the nodes that fit and why the others do
not. ``prioritize`` answers a ``HostPriorityList``; ``ExtenderBindingArgs`` names the pod
and the node. A non-200 answer or a non-empty ``Error`` is an ``ExtenderError``, as
kube-scheduler treats it.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from ..kubeclient import network
from ..toolkit import JSON


class ExtenderError(Exception):
    """The extender could not answer (unreachable, an error status, or its ``Error``)."""


@dataclass
class Filtered:
    fits: list[str]
    failed: dict[str, str] = field(default_factory=dict)
    """Why each other node does not fit (failed and unresolvable alike)."""


class Extender:
    """One extender at ``url`` (its ``urlPrefix``)."""

    def __init__(
        self,
        url: str,
        verify: ssl.SSLContext | bool,
        *,
        node_cache_capable: bool = False,
        timeout: float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """``timeout``: seconds per call, None for none (a bind waits for attaching)."""
        self.node_cache_capable = node_cache_capable
        self._http = httpx.AsyncClient(
            base_url=url.rstrip("/"),
            verify=verify,
            timeout=timeout,
            headers={"User-Agent": "dra-extension-scheduler"},
            transport=transport if transport is not None else network(url, verify),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _post(self, verb: str, body: JSON) -> Any:
        try:
            answer = await self._http.post(
                f"/{verb}",
                content=orjson.dumps(body),
                headers={"Content-Type": "application/json"},
            )
        except httpx.HTTPError as err:
            raise ExtenderError(f"{verb}: {type(err).__name__}: {err}") from err
        if answer.status_code != 200:
            raise ExtenderError(f"{verb}: HTTP {answer.status_code}: {answer.text[:300]}")
        try:
            return orjson.loads(answer.content)
        except orjson.JSONDecodeError as err:
            raise ExtenderError(f"{verb}: the answer is not JSON: {err}") from err

    def args(self, pod: JSON, nodes: list[JSON]) -> JSON:
        """``ExtenderArgs``, in Go's field spelling, with the unused form null."""
        if self.node_cache_capable:
            names = [n["metadata"]["name"] for n in nodes]
            return {"Pod": pod, "Nodes": None, "NodeNames": names}
        listing = {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": nodes}
        return {"Pod": pod, "Nodes": listing, "NodeNames": None}

    async def filter(self, pod: JSON, nodes: list[JSON]) -> Filtered:
        answer = await self._post("filter", self.args(pod, nodes))
        if not isinstance(answer, dict):
            raise ExtenderError("filter: the answer is not an ExtenderFilterResult")
        if answer.get("Error"):
            raise ExtenderError(f"filter: {answer['Error']}")
        if answer.get("Nodes") is not None:
            fits = [n["metadata"]["name"] for n in answer["Nodes"].get("items") or []]
        else:
            fits = [str(n) for n in answer.get("NodeNames") or []]
        failed = {
            **(answer.get("FailedNodes") or {}),
            **(answer.get("FailedAndUnresolvableNodes") or {}),
        }
        return Filtered(fits, {str(k): str(v) for k, v in failed.items()})

    async def prioritize(self, pod: JSON, nodes: list[JSON]) -> dict[str, int]:
        answer = await self._post("prioritize", self.args(pod, nodes))
        if not isinstance(answer, list):
            raise ExtenderError("prioritize: the answer is not a HostPriorityList")
        return {str(h.get("Host")): int(h.get("Score") or 0) for h in answer if isinstance(h, dict)}

    async def bind(self, pod: JSON, node: str) -> None:
        meta = pod["metadata"]
        body = {
            "PodName": meta["name"],
            "PodNamespace": meta.get("namespace") or "default",
            "PodUID": meta.get("uid") or "",
            "Node": node,
        }
        answer = await self._post("bind", body)
        if isinstance(answer, dict) and answer.get("Error"):
            raise ExtenderError(f"bind: {answer['Error']}")

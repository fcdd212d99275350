"""Requests that must fail, and the checks that they changed nothing: the ResourceSlicePatch
and ResourcePoolStatusRequest objects they aim at, one request as data (``Req``), the
Kubernetes Status it must be answered with, and a snapshot of both collections to compare
before and after. Shared by the bad-input and big-integer end-to-end tests."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

RSP = "/apis/resource.k8s.io/v1alpha3/resourceslicepatches"
RPSR = "/apis/resource.k8s.io/v1alpha1/resourcepoolstatusrequests"
RSP_GV = "resource.k8s.io/v1alpha3"
RPSR_GV = "resource.k8s.io/v1alpha1"
JSON = "application/json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
MIB = 1024 * 1024


def rsp(name: str, **devices: Any) -> dict[str, Any]:
    return {
        "apiVersion": RSP_GV,
        "kind": "ResourceSlicePatch",
        "metadata": {"name": name},
        "spec": {"devices": devices or {"priority": 1}},
    }


def rpsr(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": RPSR_GV,
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": spec or {"driver": "gpu.example.com"},
    }


def edited(obj: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """A deep copy of ``obj`` with ``change`` applied to it."""
    new = copy.deepcopy(obj)
    change(new)
    return new


@dataclass(frozen=True)
class Req:
    """One HTTP request; ``chunked`` sends the body without a Content-Length."""

    method: str
    path: str
    body: bytes | None = None
    content_type: str | None = JSON
    params: dict[str, str] = field(default_factory=dict)
    chunked: bool = False
    accept: str | None = None

    def kwargs(self) -> dict[str, Any]:
        headers = {"Content-Type": self.content_type} if self.content_type else {}
        if self.accept:
            headers["Accept"] = self.accept
        content: Any = self.body
        if self.chunked and self.body is not None:
            body = self.body
            content = iter([body[i : i + MIB] for i in range(0, len(body), MIB)])
        return {"headers": headers, "params": self.params, "content": content}

    def send(self, client: httpx.Client) -> httpx.Response:
        return client.request(self.method, self.path, **self.kwargs())

    async def send_async(self, client: httpx.AsyncClient) -> httpx.Response:
        kwargs = self.kwargs()
        if self.chunked and self.body is not None:
            chunks = list(kwargs["content"])

            async def stream() -> Any:
                for chunk in chunks:
                    yield chunk

            kwargs["content"] = stream()
        return await client.request(self.method, self.path, **kwargs)


def post(path: str, obj: Any, **params: str) -> Req:
    return Req("POST", path, orjson.dumps(obj), params=params)


def put(path: str, obj: Any, **params: str) -> Req:
    name = obj["metadata"]["name"]
    return Req("PUT", f"{path}/{name}", orjson.dumps(obj), params=params)


def patch(path: str, name: str, body: bytes, content_type: str, **params: str) -> Req:
    return Req("PATCH", f"{path}/{name}", body, content_type, params)


def assert_status(
    resp: httpx.Response,
    code: int,
    reason: str,
    field: str | None = None,
    message: str | None = None,
) -> None:
    """The response is a Kubernetes Status failure with this code, reason, field and message."""
    assert resp.status_code == code, resp.text[:2000]
    assert resp.headers["content-type"].split(";")[0] == JSON
    body = resp.json()
    assert body["kind"] == "Status"
    assert body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    assert body["code"] == code
    assert body["reason"] == reason
    assert isinstance(body["message"], str)
    assert body["message"]
    if field is not None:
        causes = body.get("details", {}).get("causes", [])
        assert field in [c.get("field") for c in causes], body
    if message is not None:
        assert message in body["message"], body["message"]


Snapshot = dict[str, Any]


def snapshot(client: httpx.Client, objects: Iterable[str] = ()) -> Snapshot:
    """Both collections (every item, with its resourceVersion) and the raw bytes of
    ``objects``. Not the lists' own resourceVersion: that is the store's revision, which the
    server's own background writes to other kinds (RBAC aggregation, system namespaces)
    move too."""
    state: Snapshot = {}
    for path in (RSP, RPSR):
        resp = client.get(path)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        state[path] = body["items"]
    for url in objects:
        resp = client.get(url)
        assert resp.status_code == 200, resp.text
        state[url] = resp.content
    return state


def seed(client: httpx.Client, kind: str, name: str) -> tuple[str, dict[str, Any]]:
    """Create the object a case aims at; returns its URL and the stored object."""
    path, obj = (RSP, rsp(name)) if kind == "rsp" else (RPSR, rpsr(name))
    resp = client.post(path, json=obj)
    assert resp.status_code == 201, resp.text
    return f"{path}/{name}", resp.json()

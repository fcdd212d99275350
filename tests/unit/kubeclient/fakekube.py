"""An in-process stand-in for one collection of a kube-apiserver, for the client layer's
unit tests: paged lists from a snapshot, NDJSON watches from a resourceVersion (each line
cut across chunks), bookmarks, a history that can be compacted (410 Gone, on the request
or as an ERROR event), expiring continue tokens, and injected failures. Every request is
recorded with its query."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from apiserver.kubeclient import ClusterConfig, KubeClient
from apiserver.toolkit import JSON

PATH = "/apis/example.com/v1/widgets"


def status(code: int, reason: str, message: str = "") -> JSON:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "code": code,
        "reason": reason,
        "message": message,
    }


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


@dataclass
class FakeKube:
    objects: dict[str, JSON] = field(default_factory=dict)
    history: list[tuple[int, str, JSON]] = field(default_factory=list)
    revision: int = 0
    compacted: int = 0
    """A watch from a revision below this one is answered 410."""
    gone_as_event: bool = False
    """410 as an ERROR event in a 200 stream (as kube-apiserver does), else as the answer."""
    expire_continue: int = 0
    """How many of the next continue tokens are answered 410."""
    failures: list[int | None] = field(default_factory=list)
    """Answers for the next requests: a code, or None for a refused connection."""
    requests: list[httpx.QueryParams] = field(default_factory=list)
    chunk: int = 7
    """The watch stream is sent in pieces this long, cutting through lines."""

    def put(self, name: str, **spec: Any) -> JSON:
        self.revision += 1
        kind = "MODIFIED" if name in self.objects else "ADDED"
        obj = {"metadata": {"name": name, "resourceVersion": str(self.revision)}, "spec": spec}
        self.objects[name] = obj
        self.history.append((self.revision, kind, obj))
        return obj

    def remove(self, name: str) -> None:
        self.revision += 1
        obj = dict(self.objects.pop(name))
        obj["metadata"] = {**obj["metadata"], "resourceVersion": str(self.revision)}
        self.history.append((self.revision, "DELETED", obj))

    def client(self, **kwargs: Any) -> KubeClient:
        transport = httpx.MockTransport(self.handle)
        return KubeClient(ClusterConfig("https://kube.test"), transport=transport, **kwargs)

    def watches(self) -> list[httpx.QueryParams]:
        return [q for q in self.requests if q.get("watch") == "true"]

    def lists(self) -> list[httpx.QueryParams]:
        return [q for q in self.requests if q.get("watch") != "true"]

    async def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request.url.params)
        if self.failures:
            code = self.failures.pop(0)
            if code is None:
                raise httpx.ConnectError("connection refused", request=request)
            return httpx.Response(code, json=status(code, "InternalError", "injected"))
        if request.url.path != PATH:
            return httpx.Response(404, json=status(404, "NotFound", request.url.path))
        if request.url.params.get("watch") == "true":
            return self._watch(request.url.params)
        return self._list(request.url.params)

    def _list(self, query: httpx.QueryParams) -> httpx.Response:
        token = query.get("continue", "")
        if token and self.expire_continue > 0:
            self.expire_continue -= 1
            return httpx.Response(410, json=status(410, "Expired", "continue token expired"))
        offset, snapshot = (int(p) for p in token.split(":")) if token else (0, self.revision)
        names = sorted(self.objects)
        limit = int(query.get("limit") or len(names) or 1)
        page = names[offset : offset + limit]
        meta: JSON = {"resourceVersion": str(snapshot)}
        if offset + limit < len(names):
            meta["continue"] = f"{offset + limit}:{snapshot}"
        items = [self.objects[n] for n in page]
        body = {"kind": "WidgetList", "apiVersion": "example.com/v1", "metadata": meta}
        return httpx.Response(200, json={**body, "items": items})

    def _watch(self, query: httpx.QueryParams) -> httpx.Response:
        since = int(query.get("resourceVersion") or self.revision)
        if since < self.compacted:
            gone = status(410, "Expired", f"too old resource version: {since}")
            if not self.gone_as_event:
                return httpx.Response(410, json=gone)
            return self._stream([{"type": "ERROR", "object": gone}])
        events = [{"type": t, "object": o} for rv, t, o in self.history if rv > since]
        if query.get("allowWatchBookmarks") == "true":
            bookmark = {"metadata": {"resourceVersion": str(self.revision)}}
            events.append({"type": "BOOKMARK", "object": bookmark})
        return self._stream(events)

    def _stream(self, events: list[JSON]) -> httpx.Response:
        data = b"".join(orjson.dumps(e) + b"\n" for e in events)
        chunks = [data[i : i + self.chunk] for i in range(0, len(data), self.chunk)]
        return httpx.Response(200, stream=_Chunks(chunks))

"""A source over a kube-apiserver (aggregated mode), through kubernetes-asyncio's ApiClient.

The same semantics as ``StoreSource``, spoken over HTTP: a paginated list (``limit`` and
``continue``, from one snapshot), then ``?watch=1`` from the list's resourceVersion with
bookmarks. Objects stay raw JSON (no generated models), so fields this server does not
know survive. 410 Gone — on the watch request, as an ERROR event, or on a continue token —
lists again; other failures (connection errors, 5xx, other ERROR events) back off and
resume the watch from the last resourceVersion seen. The server ending a watch after
``timeoutSeconds`` is normal: the source watches again from where it was.

Watch lines are split by hand: a ResourceSlice can be larger than the line limit of the
HTTP library's reader.

An ``optional`` source is for a kind the kube-apiserver may not serve (one behind a feature
gate, such as DeviceTaintRule before 1.37): a list answered 404 is an empty list, and
instead of watching, the source lists again every ``absent_recheck`` seconds, so the kind is
followed once the cluster serves it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson

from ..storage import EventType
from ..toolkit import JSON, Backoff
from .informer import Informer


class _Gone(Exception):
    """410: the resourceVersion the source needs is no longer in the server's history."""

    def __init__(self) -> None:
        super().__init__("resourceVersion expired")


class _Failed(Exception):
    """A request that failed in a way worth retrying."""


class KubeSource(Informer):
    gone = (_Gone,)
    transient = (_Failed, aiohttp.ClientError, TimeoutError, OSError)

    def __init__(
        self,
        api: Any,
        path: str,
        *,
        name: str,
        field_selector: str = "",
        label_selector: str = "",
        page_size: int = 500,
        watch_timeout: int = 300,
        request_timeout: float = 30.0,
        backoff: Backoff | None = None,
        optional: bool = False,
        absent_recheck: float = 60.0,
    ) -> None:
        """``api``: a kubernetes_asyncio ``ApiClient``; ``path``: the collection, e.g.
        ``/apis/resource.k8s.io/v1/resourceslices``."""
        super().__init__(name, backoff)
        self.optional = optional
        self.absent_recheck = absent_recheck
        self.absent = False
        """True while an optional collection is not served (its last list was 404)."""
        self.api = api
        self.path = path
        self.selectors = {
            k: v
            for k, v in (("fieldSelector", field_selector), ("labelSelector", label_selector))
            if v
        }
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.request_timeout = request_timeout
        self.resource_version = ""
        """The opaque resourceVersion the next watch starts from."""

    async def _get(self, params: dict[str, Any], limits: aiohttp.ClientTimeout) -> Any:
        return await self.api.call_api(
            self.path,
            "GET",
            query_params=list({**self.selectors, **params}.items()),
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=limits,
        )

    async def _list(self) -> None:
        items: list[JSON] = []
        token = ""
        version = ""
        timeout = aiohttp.ClientTimeout(total=self.request_timeout)
        while True:
            params: dict[str, Any] = {"limit": self.page_size}
            if token:
                params["continue"] = token
            response = await self._get(params, timeout)
            try:
                body = await response.read()
                status = response.status
            finally:
                response.release()
            if status == 410 and token:  # the snapshot expired between pages: start over
                items, token, version = [], "", ""
                continue
            if status == 404 and self.optional and not token:
                self.absent = True
                self.resource_version = ""
                self._replace([], self.revision)
                return
            if status != 200:
                raise _Failed(f"list {self.path}: HTTP {status}: {body[:200]!r}")
            page = orjson.loads(body)
            meta = page.get("metadata") or {}
            version = version or str(meta.get("resourceVersion") or "")
            kind = str(page.get("kind") or "").removesuffix("List")
            api_version = page.get("apiVersion")
            for item in page.get("items") or ():
                # Items of a list may come without their type; events never do.
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
                items.append(item)
            token = str(meta.get("continue") or "")
            if not token:
                break
        self.absent = False
        self.resource_version = version
        self._replace(items, _number(version))

    async def _watch(self) -> bool:
        if self.absent:
            # Nothing to watch: list again later, through the path an expired watch takes.
            await asyncio.sleep(self.absent_recheck)
            raise _Gone()
        params = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": self.watch_timeout,
        }
        timeout = aiohttp.ClientTimeout(
            total=None,
            sock_connect=self.request_timeout,
            sock_read=self.watch_timeout + self.request_timeout,
        )
        response = await self._get(params, timeout)
        delivered = False
        try:
            if response.status == 410:
                raise _Gone()
            if response.status != 200:
                body = await response.read()
                raise _Failed(f"watch {self.path}: HTTP {response.status}: {body[:200]!r}")
            pending = bytearray()
            async for chunk in response.content.iter_any():
                pending += chunk
                while (end := pending.find(b"\n")) >= 0:
                    line = bytes(pending[:end])
                    del pending[: end + 1]
                    if line.strip():
                        self._event(orjson.loads(line))
                        if not delivered:
                            delivered = True
                            self.backoff.reset()
        finally:
            response.release()
        return delivered

    def _event(self, event: JSON) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _Gone()
            raise _Failed(f"watch {self.path}: {obj.get('message') or obj}")
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind == "BOOKMARK":
            if version:
                self.resource_version = version
                self._progress(_number(version))
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            raise _Failed(f"watch {self.path}: unknown event type {kind!r}")
        if version:
            self.resource_version = version
        self._apply(EventType(kind), obj, _number(version))


def _number(version: str) -> int:
    """A resourceVersion as a number where it is one (it is, on etcd-backed servers)."""
    return int(version) if version.isdigit() else 0

"""A source over a kube-apiserver (aggregated mode), through the client layer's
``Collection``.

The same semantics as ``StoreSource``, spoken over HTTP: a paginated list (``limit`` and
``continue``, from one snapshot), then ``?watch=1`` from the list's resourceVersion with
bookmarks. Objects stay raw JSON (no generated models), so fields this server does not
know survive. 410 Gone — on the watch request, as an ERROR event, or on a continue token —
lists again; other failures (connection errors, 5xx, other ERROR events) back off and
resume the watch from the last resourceVersion seen. The server ending a watch after
``timeoutSeconds`` is normal: the source watches again from where it was.

An ``optional`` source is for a kind the kube-apiserver may not serve (one behind a feature
gate, such as DeviceTaintRule before 1.37): a list answered 404 is an empty list, and
instead of watching, the source lists again every ``absent_recheck`` seconds, so the kind is
followed once the cluster serves it.
"""

from __future__ import annotations

import asyncio

from ..kubeclient import APIError, Collection, Gone, KubeClient, NotFound, unexpected_event
from ..storage import EventType
from ..toolkit import JSON, Backoff
from .informer import Informer


class KubeSource(Informer):
    gone = (Gone,)
    transient = (APIError,)

    def __init__(
        self,
        client: KubeClient,
        path: str,
        *,
        name: str,
        field_selector: str = "",
        label_selector: str = "",
        page_size: int = 500,
        watch_timeout: int = 300,
        backoff: Backoff | None = None,
        optional: bool = False,
        absent_recheck: float = 60.0,
    ) -> None:
        """``path``: the collection, e.g. ``/apis/resource.k8s.io/v1/resourceslices``."""
        super().__init__(name, backoff)
        self.optional = optional
        self.absent_recheck = absent_recheck
        self.absent = False
        """True while an optional collection is not served (its last list was 404)."""
        self.collection = Collection(
            client,
            path,
            field_selector=field_selector,
            label_selector=label_selector,
            page_size=page_size,
            watch_timeout=watch_timeout,
        )

    @property
    def resource_version(self) -> str:
        """The opaque resourceVersion the next watch starts from."""
        return self.collection.resource_version

    async def _list(self) -> None:
        try:
            listing = await self.collection.list()
        except NotFound:
            if not self.optional:
                raise
            self.absent = True
            self.collection.resource_version = ""
            self._replace([], self.revision)
            return
        self.absent = False
        self._replace(listing.items, _number(listing.resource_version))

    async def _watch(self) -> bool:
        if self.absent:
            # Nothing to watch: list again later, through the path an expired watch takes.
            await asyncio.sleep(self.absent_recheck)
            raise Gone(410, "Expired", f"{self.collection.path} is not served")
        delivered = False
        async for event in self.collection.watch():
            self._event(event)
            if not delivered:
                delivered = True
                self.backoff.reset()
        return delivered

    def _event(self, event: JSON) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind == "BOOKMARK":
            if version:
                self._progress(_number(version))
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            raise unexpected_event(self.collection.path, event)
        self._apply(EventType(kind), obj, _number(version))


def _number(version: str) -> int:
    """A resourceVersion as a number where it is one (it is, on etcd-backed servers)."""
    return int(version) if version.isdigit() else 0

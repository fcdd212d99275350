"""One collection of an API server, followed as client-go's ListerWatcher follows it: a
paged list, then watches from the last resourceVersion seen (an event's or a bookmark's),
so a watch that ends or breaks resumes where it was, and only a 410 Gone lists again."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator

from ..toolkit import JSON
from .client import PAGE_SIZE, KubeClient, Listing


class Collection:
    def __init__(
        self,
        client: KubeClient,
        path: str,
        *,
        field_selector: str = "",
        label_selector: str = "",
        page_size: int = PAGE_SIZE,
        watch_timeout: int = 300,
    ) -> None:
        """``path``: the collection, e.g. ``/apis/resource.k8s.io/v1/resourceslices``;
        ``watch_timeout``: the ``timeoutSeconds`` each watch asks for."""
        self.client = client
        self.path = path
        self.selectors = {
            k: v
            for k, v in (("fieldSelector", field_selector), ("labelSelector", label_selector))
            if v
        }
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.resource_version = ""
        """The opaque resourceVersion the next watch starts from."""

    async def list(self) -> Listing:
        listing = await self.client.list(self.path, self.selectors, page_size=self.page_size)
        self.resource_version = listing.resource_version
        return listing

    async def watch(self) -> AsyncGenerator[JSON, None]:
        """The events of one watch from ``resource_version``, bookmarks included, each
        moving ``resource_version`` on; raises ``Gone`` when that version has expired."""
        events = self.client.watch(
            self.path,
            self.selectors,
            resource_version=self.resource_version,
            timeout_seconds=self.watch_timeout,
        )
        async with contextlib.aclosing(events):
            async for event in events:
                meta = (event.get("object") or {}).get("metadata") or {}
                version = meta.get("resourceVersion")
                if version:
                    self.resource_version = str(version)
                yield event

"""The toolkit's reflector over one ``Collection``, for a consumer that is told what it
lists and each change: list, watch from where it was, back off on failures, list again on
410 Gone. The sources have this loop in their ``Informer``; the stand-in scheduler, the
shim's attach wait and the example controller use this one."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable

from ..toolkit import JSON, Backoff, Reflector
from .collection import Collection
from .errors import APIError, Gone

CHANGES = ("ADDED", "MODIFIED", "DELETED")


def unexpected_event(path: str, event: JSON) -> APIError:
    return APIError(500, "InternalError", f"watch {path}: unknown event type {event.get('type')!r}")


class ListWatch:
    def __init__(
        self,
        collection: Collection,
        *,
        name: str,
        on_list: Callable[[list[JSON]], Awaitable[None]],
        on_event: Callable[[str, JSON], Awaitable[None]],
        log: logging.Logger,
        backoff: Backoff | None = None,
    ) -> None:
        """``on_list`` gets every item of a (re)list; ``on_event`` each change, as its type
        (``ADDED``, ``MODIFIED``, ``DELETED``) and object."""
        self.collection = collection
        self._on_list = on_list
        self._on_event = on_event
        self.reflector = Reflector(
            name,
            list_all=self._list,
            watch=self._watch,
            gone=(Gone,),
            transient=(APIError,),
            log=log,
            backoff=backoff,
        )

    async def run(self) -> None:
        """List and watch until ``stop`` (forever unless a handler stops it)."""
        await self.reflector.run()

    def stop(self) -> None:
        self.reflector.stop()

    async def _list(self) -> None:
        listing = await self.collection.list()
        await self._on_list(listing.items)

    async def _watch(self) -> bool:
        delivered = False
        # Closed as soon as the loop leaves it, so a stop ends the HTTP stream at once.
        async with contextlib.aclosing(self.collection.watch()) as events:
            async for event in events:
                kind = event.get("type")
                if kind == "BOOKMARK":
                    continue
                if kind not in CHANGES:
                    raise unexpected_event(self.collection.path, event)
                await self._on_event(str(kind), event.get("object") or {})
                delivered = True
                if self.reflector.stopped:
                    break
        return delivered

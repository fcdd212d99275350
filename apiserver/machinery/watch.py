"""Watch: initial events, live events filtered by selectors, bookmarks and timeouts.

A watch starts in one of two ways. With ``sendInitialEvents`` (or, as Kubernetes does,
with no resourceVersion or ``0``) it first sends an ADDED event per current object, then,
if bookmarks are allowed, a BOOKMARK annotated ``k8s.io/initial-events-end`` at the
revision of that state (the watch-list protocol that current kubectl and informers use).
Otherwise it starts right after the given resourceVersion. A revision that history no
longer holds ends the stream with an ERROR event carrying a 410 Expired Status.

Selectors apply to events the way the Go cacher applies them: an object that stops
matching is DELETED for this watcher, one that starts matching is ADDED.

A watch the store cuts off for falling behind (a client that stopped reading) ends the
connection at once through ``on_cut``: the stream itself cannot end it, since it waits in a
write the client does not read.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass

import orjson

from ..storage import (
    EventType,
    RevisionCompactedError,
    StorageError,
    StoredObject,
    Watch,
    WatchEvent,
)
from . import errors
from .reader import parse_resource_version
from .resource import ResourceType
from .rest import ListOptions, Watcher

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
ABORT_EXTENSION = "apiserver.abort_connection"
"""The ASGI scope extension under which the server puts a callable that aborts the request's
connection (what a cut-off watch calls)."""
QUEUE_LIMIT = 64
"""Events a watch stream holds for a client that reads slowly, beyond what the store holds
(small: the store's buffer is the one that is bounded in bytes and watched for stalls)."""


@dataclass(frozen=True)
class WatchRequest:
    list_options: ListOptions
    send_initial_events: bool | None = None
    allow_bookmarks: bool = False
    timeout_seconds: float = 1800.0
    bookmark_interval: float = 60.0


@dataclass(frozen=True)
class WatchItem:
    """One event to send: an object event, a bookmark at ``revision``, or an error."""

    type: str
    obj: StoredObject | None = None
    revision: int = 0
    initial_end: bool = False
    error: errors.StatusError | None = None


class WatchStream:
    """A prepared watch: everything that can fail with an HTTP error has been checked."""

    def __init__(
        self,
        registry: Watcher,
        resource: ResourceType,
        namespace: str | None,
        request: WatchRequest,
        initial: list[StoredObject] | None,
        start_revision: int,
    ) -> None:
        self.registry = registry
        self.resource = resource
        self.namespace = namespace
        self.request = request
        self.initial = initial
        self.start_revision = start_revision

    @classmethod
    async def open(
        cls, registry: Watcher, resource: ResourceType, namespace: str | None, request: WatchRequest
    ) -> WatchStream:
        opts = request.list_options
        rv = opts.resource_version
        send_initial = request.send_initial_events
        if send_initial is None:
            send_initial = rv in ("", "0")
        if send_initial:
            listed = await registry.list(
                namespace,
                ListOptions(
                    opts.label_selector,
                    opts.field_selector,
                    resource_version="" if rv == "0" else rv,
                    resource_version_match="NotOlderThan" if rv not in ("", "0") else "",
                ),
            )
            return cls(registry, resource, namespace, request, listed.items, listed.revision)
        start = parse_resource_version(rv) if rv not in ("", "0") else registry.store.revision
        if start > registry.store.revision and start > await registry.current_revision():
            raise errors.timeout(
                f"Too large resource version: {start}, current: {registry.store.revision}",
                [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            )
        return cls(registry, resource, namespace, request, None, start)

    async def items(
        self, on_cut: Callable[[], None] | None = None
    ) -> AsyncGenerator[WatchItem, None]:
        """The events to send; ``on_cut`` is called if the store cuts the watch off."""
        deadline = time.monotonic() + self.request.timeout_seconds
        if self.initial is not None:
            for stored in self.initial:
                yield WatchItem("ADDED", stored)
            if self.request.allow_bookmarks:
                yield WatchItem("BOOKMARK", revision=self.start_revision, initial_end=True)
        watch, queue, pump = self._subscribe(on_cut)
        interval = self.request.bookmark_interval
        next_bookmark = time.monotonic() + interval
        last_bookmark = self.start_revision
        try:
            while True:
                now = time.monotonic()
                if now >= deadline:
                    return
                if self.request.allow_bookmarks and now >= next_bookmark:
                    # Due even while events keep coming (they may all be filtered out): a
                    # watcher with selectors must still learn how far the resource has got.
                    next_bookmark = now + interval
                    progress = watch.progress() if queue.empty() else None
                    if progress is not None and progress > last_bookmark:
                        last_bookmark = progress
                        yield WatchItem("BOOKMARK", revision=progress)
                wait = deadline - now
                if self.request.allow_bookmarks:
                    wait = min(wait, max(next_bookmark - now, 0.0))
                try:
                    if queue.empty():
                        # A timeout scope, not wait_for: no task per event and watcher.
                        async with asyncio.timeout(wait):
                            item = await queue.get()
                    else:
                        item = queue.get_nowait()
                except TimeoutError:
                    continue
                if item is None:
                    return
                if isinstance(item, RevisionCompactedError):
                    yield WatchItem("ERROR", error=errors.expired(str(item)))
                    return
                if isinstance(item, StorageError):
                    yield WatchItem("ERROR", error=errors.unavailable(f"watch failed: {item}"))
                    return
                if isinstance(item, BaseException):
                    raise item
                event_type = self._visible_type(item)
                if event_type is not None:
                    yield WatchItem(event_type, _shown_object(event_type, item))
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pump
            await watch.close()

    def _subscribe(
        self, on_cut: Callable[[], None] | None
    ) -> tuple[Watch, asyncio.Queue[WatchEvent | BaseException | None], asyncio.Task[None]]:
        """The store watch from the start revision, the queue it is pumped into, and the pump."""
        # Bounded: a client that reads slowly stops the pump, the store's subscription then
        # backs up, and past its own limit the store ends the watch (the client re-watches).
        queue: asyncio.Queue[WatchEvent | BaseException | None] = asyncio.Queue(QUEUE_LIMIT)
        watch = self.registry.store.watch(
            self.resource.key_prefix(self.namespace), self.start_revision
        )
        watch.on_cut = on_cut
        return watch, queue, asyncio.create_task(_pump(watch, queue))

    def _visible_type(self, event: WatchEvent) -> str | None:
        opts = self.request.list_options
        if opts.label_selector.empty and opts.field_selector.empty:
            return event.type.value
        matches = self.registry.matches
        now = matches(event.object.obj, opts)
        if event.type is EventType.DELETED:
            return "DELETED" if now else None
        before = event.prev is not None and matches(event.prev.obj, opts)
        if event.type is EventType.ADDED or not before:
            return "ADDED" if now else None
        return "MODIFIED" if now else "DELETED"


def _shown_object(event_type: str, event: WatchEvent) -> StoredObject:
    """The object to send. An update that stops matching the selectors is a DELETED of the
    last matching state at the update's revision, as the Go cacher sends it."""
    if event_type != "DELETED" or event.type is EventType.DELETED or event.prev is None:
        return event.object
    obj = event.prev.copy()
    obj.setdefault("metadata", {})["resourceVersion"] = str(event.revision)
    return StoredObject(event.object.key, event.revision, orjson.dumps(obj), obj)


async def _pump(
    watch: Watch,
    queue: asyncio.Queue[WatchEvent | BaseException | None],
) -> None:
    """Move events from the store watch into a queue the stream can wait on with timeouts."""
    try:
        async for event in watch:
            await queue.put(event)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # delivered to the stream, which ends with an ERROR event
        await queue.put(exc)
        return
    await queue.put(None)

"""Empties a namespace being deleted, then lets it go (the namespace controller).

A deleted namespace stays, ``Terminating``, while ``kubernetes`` is in its
``spec.finalizers``. For each such namespace this controller deletes every object of every
namespaced kind in it; when nothing is left it removes the finalizer, and the registry then
removes the namespace. Objects held by their own finalizers are waited for: the namespace is
looked at again every ``interval`` seconds until they are gone. Namespaces are watched
through a source of their own, which this controller starts and closes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..kinds.namespace import KUBERNETES_FINALIZER, FinalizeUpdate, NamespaceStrategy
from ..machinery import DeleteOptions, ListOptions, Registry, WriteOptions, errors
from ..sources import Source, SourceEvent
from ..storage import EventType
from ..tasks import BackgroundTask
from ..toolkit import CoalescingQueue, TokenBucket, run_worker

log = logging.getLogger("apiserver.controllers.namespaces")

MANAGER = "namespace-controller"


class ContentRemaining(Exception):
    """Objects in the namespace are still there (held by finalizers, or created meanwhile)."""


class NamespaceDeleter:
    def __init__(
        self,
        namespaces: Source,
        registry: Registry,
        contents: Sequence[Registry],
        *,
        interval: float = 1.0,
        rate: float = 20.0,
        burst: int = 50,
    ) -> None:
        self.namespaces = namespaces
        self.registry = registry
        self.contents = [r for r in contents if r.resource.namespaced]
        self.finalize = FinalizeUpdate(NamespaceStrategy.core())
        self.queue = CoalescingQueue(interval)
        self.bucket = TokenBucket(rate, burst)
        self._task = BackgroundTask("namespace deletion", self._run, log)
        namespaces.add_handler(self._on_namespace)

    def _on_namespace(self, event: SourceEvent) -> None:
        meta = event.obj.get("metadata") or {}
        if meta.get("deletionTimestamp") and event.type is not EventType.DELETED:
            self.queue.add(str(meta.get("name", "")))

    async def start(self) -> None:
        await self.namespaces.start()
        self._task.start()

    async def close(self) -> None:
        await self._task.close()
        await self.namespaces.close()

    def readiness(self) -> dict[str, bool]:
        return {"informer-namespaces": self.namespaces.has_synced}

    async def _run(self) -> None:
        await self.namespaces.wait_synced()
        await run_worker(self.queue, self.bucket, self.sync, self._failed)

    def _failed(self, name: str, exc: Exception) -> None:
        if isinstance(exc, ContentRemaining):
            log.info("namespace %s: %s; looking again", name, exc)
        else:
            log.warning("deleting the content of namespace %s failed: %s; retrying", name, exc)
        self.queue.add(name)

    async def sync(self, name: str) -> bool:
        """Move the deletion of ``name`` on; True once its finalizer is removed (or it is
        gone, or not being deleted). Raises ``ContentRemaining`` while objects are left."""
        try:
            current = await self.registry.get(None, name)
        except errors.StatusError as err:
            if err.code == 404:
                return True
            raise
        obj = current.copy()
        finalizers = (obj.get("spec") or {}).get("finalizers") or []
        if not obj["metadata"].get("deletionTimestamp") or KUBERNETES_FINALIZER not in finalizers:
            return True
        left = await self.delete_content(name)
        if left:
            raise ContentRemaining(f"{', '.join(left)} still there")
        obj["spec"]["finalizers"] = [f for f in finalizers if f != KUBERNETES_FINALIZER]
        await self.registry.update(
            None, name, obj, WriteOptions(field_manager=MANAGER), update=self.finalize
        )
        log.info("namespace %s is empty; its finalizer is removed", name)
        return True

    async def delete_content(self, namespace: str) -> list[str]:
        """Delete everything in ``namespace``; what is still there afterwards, as
        ``count plural`` strings (empty when the namespace is empty)."""
        left = []
        for registry in self.contents:
            await registry.delete_collection(namespace, ListOptions(), DeleteOptions())
            remaining = await registry.list(namespace, ListOptions())
            if remaining.items:
                left.append(f"{len(remaining.items)} {registry.resource.plural}")
        return left

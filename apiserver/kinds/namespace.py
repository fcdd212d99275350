"""Core ``v1`` Namespace (standalone mode): cluster-scoped, short name ``ns``, status
subresource with ``phase`` ``Active`` (set on create) or ``Terminating``.

Also here, as pure functions over the stored object, what namespace lifecycle admission
needs: ``namespace_phase`` (Terminating once a deletion was asked for),
``creation_refusal`` (the error for creating into a missing or terminating namespace) and
``deletion_refusal`` (``default``, ``kube-system`` and ``kube-public`` are never deleted);
``NamespaceReader``, how an admission plugin reads a namespace; and ``SystemNamespaces``,
which creates ``default`` and ``kube-system`` at start when missing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar

from ..api import dns1123_label_errors
from ..api.core import Namespace, validate_namespace, validate_namespace_status
from ..api.field import FieldError
from ..machinery import Column, Registry, Strategy, WriteOptions, errors
from ..storage import Store
from ..tasks import BackgroundTask
from ..toolkit import json_copy
from .event import CORE_GROUP

log = logging.getLogger("apiserver.namespaces")

ACTIVE = "Active"
TERMINATING = "Terminating"
NAME_LABEL = "kubernetes.io/metadata.name"
"""The label every namespace carries with its own name, so selectors can pick namespaces."""
SYSTEM_NAMESPACES = ("default", "kube-system")
"""Created at start when missing."""
UNDELETABLE_NAMESPACES = ("default", "kube-system", "kube-public")
KUBERNETES_FINALIZER = "kubernetes"
"""Put in ``spec.finalizers`` of every new namespace; the namespace controller removes it once
everything in the namespace is deleted."""


def namespace_phase(obj: dict[str, Any]) -> str:
    """``Terminating`` once a deletion was asked for (or the status says so), else ``Active``."""
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return TERMINATING
    phase = (obj.get("status") or {}).get("phase")
    return TERMINATING if phase == TERMINATING else ACTIVE


def creation_refusal(namespace: str, stored: dict[str, Any] | None) -> errors.StatusError | None:
    """Why an object may not be created in ``namespace``, given the stored Namespace (None if
    there is none): 404 NotFound when it is missing, 403 Forbidden (cause
    ``NamespaceTerminating``) while it is being deleted; None when the create may go on."""
    if stored is None:
        return errors.not_found("namespaces", CORE_GROUP, namespace)
    if namespace_phase(stored) == TERMINATING:
        message = (
            f"unable to create new content in namespace {namespace} because it is being terminated"
        )
        return errors.StatusError(
            403,
            "Forbidden",
            message,
            details={
                "name": namespace,
                "kind": "namespaces",
                "causes": [
                    {
                        "reason": "NamespaceTerminating",
                        "message": message,
                        "field": "metadata.namespace",
                    }
                ],
            },
        )
    return None


def deletion_refusal(name: str) -> errors.StatusError | None:
    """403 Forbidden for the namespaces the system itself relies on; None for any other."""
    if name in UNDELETABLE_NAMESPACES:
        return errors.StatusError(
            403,
            "Forbidden",
            f'namespaces "{name}" is forbidden: this namespace may not be deleted',
            details={"name": name, "kind": "namespaces"},
        )
    return None


def _label_with_name(obj: dict[str, Any]) -> None:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    # A bad name is reported once, as the name, not again as a label value.
    if isinstance(meta, dict) and isinstance(name, str) and not dns1123_label_errors(name):
        labels = meta.get("labels")
        if not isinstance(labels, dict):
            labels = meta["labels"] = {}
        labels[NAME_LABEL] = name


class NamespaceReader:
    """What an admission plugin that looks at a request's namespace is built on: it reads
    the Namespaces through the cluster's own Namespace registry, which exists only after the
    admission chain its registries are built with, so it is told after construction."""

    reader: ClassVar[str]
    """Who reads, for the error when nothing was bound."""

    def __init__(self) -> None:
        self._namespaces: Registry | None = None

    def bind(self, namespaces: Registry) -> None:
        """The registry the namespaces are read from (the cluster's own)."""
        self._namespaces = namespaces

    async def namespace(self, name: str) -> dict[str, Any] | None:
        """The stored Namespace ``name``, or None when there is none."""
        if self._namespaces is None:
            raise errors.internal(f"{self.reader} has no namespace registry")
        try:
            return (await self._namespaces.get(None, name)).obj
        except errors.StatusError as err:
            if err.code != 404:
                raise
            return None


class NamespaceStrategy(Strategy[Namespace]):
    model = Namespace
    version = "v1"
    kind = "Namespace"
    plural = "namespaces"
    singular = "namespace"
    short_names = ("ns",)
    has_status = True
    columns: ClassVar[tuple[Column, ...]] = (
        Column("Status", "string", namespace_phase, "The status of the namespace."),
    )

    @classmethod
    def core(cls) -> NamespaceStrategy:
        return cls(CORE_GROUP)

    def name_errors(self, name: str) -> list[str]:
        return dns1123_label_errors(name)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        obj["status"] = {"phase": ACTIVE}
        _label_with_name(obj)
        spec = obj.get("spec")
        if spec is None:
            spec = obj["spec"] = {}
        if isinstance(spec, dict):
            finalizers = spec.get("finalizers")
            if finalizers is None:
                spec["finalizers"] = [KUBERNETES_FINALIZER]
            elif isinstance(finalizers, list) and KUBERNETES_FINALIZER not in finalizers:
                finalizers.append(KUBERNETES_FINALIZER)

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        _label_with_name(obj)
        # Only the namespace controller changes spec.finalizers (through ``FinalizeUpdate``).
        kept = (old.get("spec") or {}).get("finalizers")
        if kept is not None and obj.get("spec") is None:
            obj["spec"] = {}
        spec = obj.get("spec")
        if isinstance(spec, dict):
            if kept is None:
                spec.pop("finalizers", None)
            else:
                spec["finalizers"] = kept

    def pending_finalizers(self, obj: dict[str, Any]) -> list[str]:
        spec = obj.get("spec")
        own = spec.get("finalizers") if isinstance(spec, dict) else None
        return super().pending_finalizers(obj) + (list(own) if isinstance(own, list) else [])

    def prepare_for_delete(self, obj: dict[str, Any]) -> None:
        obj["status"] = {**(obj.get("status") or {}), "phase": TERMINATING}

    def validate(self, obj: Namespace) -> list[FieldError]:
        return validate_namespace(obj)

    def validate_status(self, obj: Namespace) -> list[FieldError]:
        return validate_namespace_status(obj)


class FinalizeUpdate:
    """The write of the namespace controller (``/finalize`` upstream): only
    ``spec.finalizers`` may change, and once the last one is gone from a namespace being
    deleted, the namespace goes."""

    subresource = "finalize"

    def __init__(self, strategy: NamespaceStrategy) -> None:
        self.strategy = strategy

    def carry_over(self, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        result = json_copy(old)
        spec = new.get("spec")
        finalizers = spec.get("finalizers") if isinstance(spec, dict) else None
        result_spec = result.setdefault("spec", {})
        if finalizers:
            result_spec["finalizers"] = finalizers
        else:
            result_spec.pop("finalizers", None)
        return result

    def validate_update(self, new: Any, old: Any) -> list[FieldError]:
        return self.strategy.validate(new)


class SystemNamespaces:
    """Creates ``default`` and ``kube-system`` at start when they are missing, retrying while
    the store is unavailable; ready once both exist."""

    def __init__(self, store: Store, *, retry_interval: float = 1.0) -> None:
        self.registry = Registry(NamespaceStrategy.core(), store)
        self.retry_interval = retry_interval
        self._created = asyncio.Event()
        self._task = BackgroundTask("system namespaces", self._run, log)

    async def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.close()

    def readiness(self) -> dict[str, bool]:
        return {"system-namespaces": self._created.is_set()}

    async def wait_created(self) -> None:
        await self._created.wait()

    async def _run(self) -> None:
        while True:
            try:
                for name in SYSTEM_NAMESPACES:
                    await self._ensure(name)
            except errors.StatusError as err:
                log.warning("creating the system namespaces: %s; retrying", err.message)
                await asyncio.sleep(self.retry_interval)
                continue
            self._created.set()
            return

    async def _ensure(self, name: str) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        try:
            await self.registry.create(None, body, WriteOptions(field_manager="dra-apiserver"))
        except errors.StatusError as err:
            if err.reason != "AlreadyExists":  # kept from an earlier run, or another replica's
                raise

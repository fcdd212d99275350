"""The generic registry of a stored kind: create, get, list, update, patch, apply and delete.

This is where Kubernetes object semantics live, once: server-set metadata, generation
bumps on spec changes only, optimistic concurrency, finalizers and ``deletionTimestamp``,
dry run, admission and managed fields. What differs between kinds comes from the
``Strategy``; what is stored comes from the ``Store``; a written body is read once by
``intake`` (type meta, fieldValidation, types).

Every update goes through one path, ``write``: it reads the object, asks an
``UpdatedObject`` (``updates``: a PUT's replacement, a patch, an apply, an action's
mutation) for the new one, checks the resourceVersion and uid that pin the write, and
writes at the revision it read, computing again after a lost race. What a write may change
is the ``UpdateStrategy``'s to say (``MainUpdate`` here, ``StatusUpdate`` in ``status``).
Objects are JSON-shaped dicts here, parsed with the kind's model once per write.
"""

from __future__ import annotations

import logging
import secrets
import typing
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from ..api import KindModel, validate_object_meta
from ..api import field as fielderr
from ..api.field import FieldError
from ..storage import (
    KeyExistsError,
    KeyNotFoundError,
    PreconditionFailedError,
    StorageError,
    Store,
    StoredObject,
)
from ..toolkit import json_copy
from ..toolkit.timestamps import now_rfc3339
from . import errors
from .admission import CREATE, DELETE, UPDATE, AdmissionChain, AdmissionRequest
from .canonical import canonicalize_quantities
from .decoding import check_object
from .fieldmanager import FieldManager
from .intake import BodyType, check_names, check_type_meta, parse_written
from .reader import StoreReader, parse_resource_version
from .rest import (
    DeleteOptions,
    ListOptions,
    ListResult,
    UpdatedObject,
    WriteOptions,
    WriteResult,
    unstored,
)
from .strategy import ExclusiveKey, Strategy
from .updates import Applied, Patched, Replacement, Target

_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SERVER_SET = (
    "uid",
    "resourceVersion",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
)
_KEPT_ON_UPDATE = (
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)

log = logging.getLogger("apiserver")


class UpdateStrategy(Protocol):
    """What one endpoint's updates may change, and how they are validated."""

    subresource: str
    """The subresource the endpoint serves ("" for the object itself), for managed fields."""

    def carry_over(self, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        """The object to store: ``new`` with what this endpoint may not change from ``old``."""
        ...

    def validate_update(self, new: Any, old: Any) -> list[FieldError]: ...


class MainUpdate:
    """Writes to the object itself: metadata the server owns and the status are kept, the
    kind's own preparation applies, and the generation moves when the spec changed."""

    subresource = ""

    def __init__(self, strategy: Strategy[Any]) -> None:
        self.strategy = strategy

    def carry_over(self, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        meta = new.setdefault("metadata", {})
        old_meta = old["metadata"]
        for name in _KEPT_ON_UPDATE:
            if name in old_meta:
                meta[name] = old_meta[name]
            else:
                meta.pop(name, None)
        meta.pop("selfLink", None)
        meta["resourceVersion"] = old_meta.get("resourceVersion")
        if self.strategy.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        self.strategy.prepare_for_update(new, old)
        generation = old_meta.get("generation", 1)
        meta["generation"] = generation + 1 if _spec(new) != _spec(old) else generation
        return new

    def validate_update(self, new: Any, old: Any) -> list[FieldError]:
        return self.strategy.validate_update(new, old)


class Registry(StoreReader):
    """A stored kind: its strategy over a store, every verb."""

    store: Store

    def __init__(
        self, strategy: Strategy[Any], store: Store, admission: AdmissionChain | None = None
    ) -> None:
        super().__init__(strategy, store)
        self.store = store
        self.admission = admission or AdmissionChain()
        self.field_manager = FieldManager(
            strategy.model, self.resource.group_version, has_status=strategy.has_status
        )
        self.main_update = MainUpdate(strategy)
        self.body_type = BodyType(self.resource.group_version, self.resource.kind)

    # -- checks ------------------------------------------------------------------

    def _invalid(self, name: str, errs: list[FieldError]) -> errors.StatusError:
        return errors.invalid(self.resource.kind, self.resource.group, name, errs)

    def _parse(
        self,
        obj: dict[str, Any],
        opts: WriteOptions,
        check: Callable[[Any], list[FieldError]],
    ) -> tuple[KindModel, list[str]]:
        """The one strict parse of a write (``intake``), then metadata and the kind's own
        rules, all reported together. Returns the model and the warnings for the client."""
        model, warnings = parse_written(
            obj, self.strategy.model, self.body_type, opts.field_validation
        )
        kind_model = typing.cast(KindModel, model)
        errs = validate_object_meta(
            kind_model.metadata,
            namespaced=self.resource.namespaced,
            name_errors=self.strategy.name_errors,
        )
        errs += check(kind_model)
        if errs:
            raise self._invalid((obj.get("metadata") or {}).get("name") or "", errs)
        return kind_model, warnings

    def _model(self, obj: dict[str, Any]) -> KindModel:
        """The model of an already stored object (trusted, so no unknown-field handling)."""
        model, _, errs = check_object(json_copy(obj), self.strategy.model)
        if model is None:
            raise errors.internal(f"stored object does not match its schema: {errs[:3]}")
        return typing.cast(KindModel, model)

    def _manager(self, opts: WriteOptions) -> str:
        if opts.field_manager:
            return opts.field_manager
        return (opts.user_agent.split("/", 1)[0] or "unknown").strip()[:128]

    async def _admit(
        self,
        operation: str,
        namespace: str | None,
        name: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        opts: WriteOptions | DeleteOptions,
        subresource: str = "",
    ) -> None:
        await self.admission.admit(
            AdmissionRequest(
                operation,
                self.resource,
                subresource,
                namespace,
                name,
                obj,
                old,
                opts.user,
                opts.dry_run,
            )
        )

    # -- create ------------------------------------------------------------------

    async def create(
        self,
        namespace: str | None,
        body: dict[str, Any],
        opts: WriteOptions,
        *,
        manager_fields: bool = True,
    ) -> WriteResult:
        obj = body
        check_type_meta(obj, self.body_type)
        now = self._prepare_new(namespace, obj)
        _, warnings = self._parse(obj, opts, self.strategy.validate)
        name = obj["metadata"]["name"]
        await self._admit(CREATE, namespace, name, obj, None, opts)
        if manager_fields:
            obj["metadata"].pop("managedFields", None)
            self.field_manager.update(None, obj, self._manager(opts), now=now)
        if opts.dry_run:
            existing = await self._get_stored(namespace, name)
            if existing is not None:
                raise errors.already_exists(self.resource.plural, self.resource.group, name)
            return WriteResult(unstored(obj), 201, warnings)
        return WriteResult(await self._store_new(self._key(namespace, name), obj), 201, warnings)

    def _prepare_new(self, namespace: str | None, obj: dict[str, Any]) -> str:
        """Set what the server sets on a new object (name from ``generateName``, uid,
        timestamps, generation) and the kind's defaults; returns the creation time."""
        meta = obj.setdefault("metadata", {})
        if self.resource.namespaced:
            check_names(obj, namespace, None, namespaced=True)
            if namespace:
                meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        generate = meta.get("generateName")
        if not meta.get("name") and isinstance(generate, str) and generate:
            meta["name"] = generate + "".join(
                secrets.choice(_NAME_SUFFIX_ALPHABET) for _ in range(5)
            )
        for server_set in _SERVER_SET:
            meta.pop(server_set, None)
        meta["uid"] = str(uuid.uuid4())
        now = now_rfc3339()
        meta["creationTimestamp"] = now
        meta["generation"] = 1
        if self.strategy.has_status and not self.strategy.status_on_create:
            obj.pop("status", None)
        self.strategy.prepare_for_create(obj)
        canonicalize_quantities(obj, self.field_manager.schema)
        return now

    async def _store_new(self, key: str, obj: dict[str, Any]) -> StoredObject:
        """Create the object, with the keys it holds alone in the same transaction."""
        name = obj["metadata"]["name"]
        exclusive = self.strategy.exclusive_keys(obj)
        try:
            if exclusive:
                stored, *_ = await self.store.create_many(
                    [(key, obj), *((k.key, k.value) for k in exclusive)]
                )
                return stored
            return await self.store.create(key, obj)
        except KeyExistsError as err:
            taken = next((k for k in exclusive if k.key == err.key), None)
            if taken is None:
                raise self._storage_error(err, name) from err
            raise self._held(name, taken) from err
        except StorageError as err:
            raise self._storage_error(err, name) from err

    def _held(self, name: str, taken: ExclusiveKey) -> errors.StatusError:
        """409: another object holds a key this one asks for alone."""
        cause = {
            "reason": "FieldValueDuplicate",
            "message": f"{taken.description} is already held",
            "field": taken.field,
        }
        return errors.StatusError(
            409,
            "Conflict",
            f'{self.resource.kind} "{name}" cannot be created: {taken.description} is already held',
            details={
                "name": name,
                "group": self.resource.group,
                "kind": self.resource.plural,
                "causes": [cause],
            },
        )

    async def _remove(self, current: StoredObject) -> StoredObject:
        """Delete the stored object at its revision, with the keys it holds alone."""
        exclusive = self.strategy.exclusive_keys(current.obj)
        if not exclusive:
            return await self.store.delete(current.key, expected_revision=current.revision)
        deleted, *_ = await self.store.delete_many(
            [(current.key, current.revision), *((k.key, None) for k in exclusive)]
        )
        return deleted

    # -- update, patch, apply: one update path ------------------------------------

    def _target(self, namespace: str | None, name: str) -> Target:
        return Target(self.strategy, self.field_manager, namespace, name)

    async def update(
        self,
        namespace: str | None,
        name: str,
        body: dict[str, Any],
        opts: WriteOptions,
        *,
        update: UpdateStrategy | None = None,
    ) -> WriteResult:
        """PUT: the body replaces the object; its resourceVersion must match (409 otherwise)."""
        replacement = Replacement(self._target(namespace, name), body)
        return await self.write(namespace, name, replacement, opts, update)

    async def patch(
        self,
        namespace: str | None,
        name: str,
        patch: bytes,
        patch_type: str,
        opts: WriteOptions,
        *,
        update: UpdateStrategy | None = None,
    ) -> WriteResult:
        """JSON, merge and strategic merge patches (apply is ``apply``)."""
        patched = Patched(self._target(namespace, name), patch, patch_type)
        return await self.write(namespace, name, patched, opts, update)

    async def apply(
        self,
        namespace: str | None,
        name: str,
        config: dict[str, Any],
        opts: WriteOptions,
        *,
        update: UpdateStrategy | None = None,
    ) -> WriteResult:
        """Server-side apply: merge the configuration into what the manager owns, creating
        the object if it does not exist (only through the object itself, not a
        subresource)."""
        subresource = (update or self.main_update).subresource
        applied = Applied(self._target(namespace, name), config, opts, subresource)
        return await self.write(namespace, name, applied, opts, update)

    async def write(
        self,
        namespace: str | None,
        name: str,
        change: UpdatedObject,
        opts: WriteOptions,
        update: UpdateStrategy | None = None,
    ) -> WriteResult:
        """The one update path: read, compute the new object, check what pins the write,
        write at the read revision; a lost race reads again and computes again.

        A resourceVersion the client sent pins the write: a mismatch is a 409, never
        retried (PUT always sends one). Otherwise a concurrent write just means try again.
        ``update`` says what the endpoint may change (the object itself by default).
        """
        update = update or self.main_update
        manager = self._manager(opts)
        while True:  # a lost race means another write committed: progress
            current = await self._get_stored(namespace, name)
            if current is None:
                created = None if update.subresource else change.created()
                if created is None:
                    raise errors.not_found(self.resource.plural, self.resource.group, name)
                try:
                    return await self.create(
                        namespace, created, opts, manager_fields=change.records_manager
                    )
                except errors.StatusError as err:
                    if err.reason == "AlreadyExists":
                        continue
                    raise
            stated = change.preconditions()
            if stated is not None:
                self._check_pinned(stated, current, name)
            new = change.updated(current)
            if stated is None:
                self._check_pinned(new.get("metadata") or {}, current, name)
            try:
                return await self._write_update(
                    current, new, opts, update, manager, record=change.records_manager
                )
            except _Retry:
                continue

    def _check_pinned(self, meta: dict[str, Any], current: StoredObject, name: str) -> None:
        """A resourceVersion the write pins must be the stored one (409), and a string; a
        uid that differs from the stored one is an attempt to change an immutable field."""
        sent_rv = meta.get("resourceVersion")
        if sent_rv is not None and not isinstance(sent_rv, str):
            raise self._invalid(
                name,
                [
                    fielderr.type_invalid(
                        "metadata.resourceVersion",
                        sent_rv,
                        "metadata.resourceVersion in body must be of type string",
                    )
                ],
            )
        sent_uid = meta.get("uid")
        if sent_uid and sent_uid != current.obj["metadata"].get("uid"):
            raise self._invalid(
                name, [fielderr.invalid("metadata.uid", sent_uid, "field is immutable")]
            )
        if sent_rv and sent_rv != str(current.revision):
            raise errors.conflict(self.resource.plural, self.resource.group, name, errors.MODIFIED)

    async def _write_update(
        self,
        current: StoredObject,
        new: dict[str, Any],
        opts: WriteOptions,
        update: UpdateStrategy,
        manager: str,
        *,
        record: bool,
    ) -> WriteResult:
        old = current.obj
        meta = old["metadata"]
        name = meta["name"]
        # Before the generation is decided: 1000m where 1 was stored is no change.
        canonicalize_quantities(new, self.field_manager.schema)
        new = update.carry_over(old, new)
        old_model = self._model(old)
        _, warnings = self._parse(new, opts, lambda m: update.validate_update(m, old_model))
        self._check_exclusive_keys_kept(old, new)
        self._check_no_new_finalizers(old, new)
        if _same_object(old, new) and (record or _same_managers(old, new)):
            # An apply that only adds a co-owner still records it (timestamps aside).
            return WriteResult(current, 200, warnings)
        await self._admit(UPDATE, meta.get("namespace"), name, new, old, opts, update.subresource)
        if record:
            self.field_manager.update(
                old, new, manager, subresource=update.subresource, now=now_rfc3339()
            )
        if opts.dry_run:
            return WriteResult(unstored(new), 200, warnings)
        try:
            stored = await self.store.update(current.key, new, expected_revision=current.revision)
        except PreconditionFailedError:
            raise _Retry() from None
        except StorageError as err:
            raise self._storage_error(err, name) from err
        if new["metadata"].get("deletionTimestamp") and not self.strategy.pending_finalizers(new):
            await self._remove_finalized(stored)
        return WriteResult(stored, 200, warnings)

    async def _remove_finalized(self, stored: StoredObject) -> None:
        """The last finalizer is gone: the object goes now (watchers see MODIFIED, DELETED)."""
        try:
            await self._remove(stored)
        except (KeyNotFoundError, PreconditionFailedError):
            pass
        except StorageError as err:
            # The update is stored: answer it. The object waits, without finalizers,
            # for the next write (or delete) to remove it.
            name = stored.obj["metadata"]["name"]
            log.warning(
                "%s: removing %s after its last finalizer failed: %s", stored.key, name, err
            )

    def _check_no_new_finalizers(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        meta = old["metadata"]
        added = set(new["metadata"].get("finalizers") or []) - set(meta.get("finalizers") or [])
        if meta.get("deletionTimestamp") and added:
            problem = fielderr.forbidden(
                "metadata.finalizers",
                "no new finalizers can be added if the object is being deleted",
            )
            raise self._invalid(meta["name"], [problem])

    def _check_exclusive_keys_kept(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        before = {(k.key, k.field) for k in self.strategy.exclusive_keys(old)}
        after = self.strategy.exclusive_keys(new)
        changed = [k for k in after if (k.key, k.field) not in before]
        if changed or len(after) != len(before):
            field = changed[0].field if changed else "spec"
            raise self._invalid(
                old["metadata"]["name"],
                [fielderr.invalid(field, None, "field is immutable: it holds an exclusive key")],
            )

    # -- delete --------------------------------------------------------------------

    async def delete(self, namespace: str | None, name: str, opts: DeleteOptions) -> WriteResult:
        while True:  # a lost race means another write committed: progress
            current = await self.get(namespace, name)
            meta = current.obj["metadata"]
            if opts.precondition_uid and opts.precondition_uid != meta.get("uid"):
                raise errors.conflict(
                    self.resource.plural,
                    self.resource.group,
                    name,
                    f"Precondition failed: UID in precondition: {opts.precondition_uid}, UID in object meta: {meta.get('uid')}",
                )
            if (
                opts.precondition_resource_version
                and opts.precondition_resource_version != meta.get("resourceVersion")
            ):
                raise errors.conflict(
                    self.resource.plural,
                    self.resource.group,
                    name,
                    f"Precondition failed: ResourceVersion in precondition: {opts.precondition_resource_version},"
                    f" ResourceVersion in object meta: {meta.get('resourceVersion')}",
                )
            await self._admit(DELETE, namespace, name, None, current.obj, opts)
            if self.strategy.pending_finalizers(current.obj):
                if meta.get("deletionTimestamp"):
                    return WriteResult(current, 200)
                marked = current.copy()
                marked["metadata"]["deletionTimestamp"] = now_rfc3339()
                marked["metadata"]["deletionGracePeriodSeconds"] = 0
                marked["metadata"]["generation"] = meta.get("generation", 1) + 1
                self.strategy.prepare_for_delete(marked)
                if opts.dry_run:
                    return WriteResult(unstored(marked), 200)
                try:
                    stored = await self.store.update(
                        current.key, marked, expected_revision=current.revision
                    )
                except PreconditionFailedError:
                    continue
                except StorageError as err:
                    raise self._storage_error(err, name) from err
                return WriteResult(stored, 200)
            if opts.dry_run:
                return WriteResult(current, 200, deleted=True)
            try:
                deleted = await self._remove(current)
            except PreconditionFailedError as err:
                if err.key != current.key:
                    raise self._storage_error(err, name) from err
                continue
            except StorageError as err:
                raise self._storage_error(err, name) from err
            return WriteResult(deleted, 200, deleted=True)

    async def delete_collection(
        self, namespace: str | None, list_opts: ListOptions, opts: DeleteOptions
    ) -> ListResult:
        listed = await self.list(
            namespace, ListOptions(list_opts.label_selector, list_opts.field_selector)
        )
        deleted = []
        for item in listed.items:
            meta = item.obj["metadata"]
            try:
                result = await self.delete(meta.get("namespace"), meta["name"], opts)
            except errors.StatusError as err:
                if err.code == 404:
                    continue
                raise
            deleted.append(result.obj)
        return ListResult(deleted, self.store.revision)


class _Retry(Exception):
    """The stored object changed between read and write."""


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    """Everything but metadata and status: a change here bumps the generation."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _same_object(old: dict[str, Any], new: dict[str, Any]) -> bool:
    def strip(obj: dict[str, Any]) -> dict[str, Any]:
        meta = {
            k: v
            for k, v in obj.get("metadata", {}).items()
            if k not in ("managedFields", "resourceVersion")
        }
        return {**obj, "metadata": meta}

    return strip(old) == strip(new)


def _same_managers(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """managedFields equal but for their timestamps (a no-op apply leaves them alone)."""

    def entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {k: v for k, v in e.items() if k != "time"}
            for e in obj.get("metadata", {}).get("managedFields") or []
            if isinstance(e, dict)
        ]

    return entries(old) == entries(new)


__all__ = [
    "DeleteOptions",
    "ListOptions",
    "ListResult",
    "MainUpdate",
    "Registry",
    "UpdateStrategy",
    "WriteOptions",
    "WriteResult",
    "parse_resource_version",
]

"""The generic registry: create, get, list, update, patch, apply and delete for any kind.

This is where Kubernetes object semantics live, once: server-set metadata, generation
bumps on spec changes only, the status subresource split, optimistic concurrency,
finalizers and ``deletionTimestamp``, dry run, field validation and managed fields.
What differs between kinds comes from the ``Strategy``; what is stored comes from the
``Store``. Objects are JSON-shaped dicts here, checked with the kind's model.
"""

from __future__ import annotations

import base64
import builtins
import copy
import logging
import secrets
import typing
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from ..api import field as fielderr
from ..api.field import FieldError
from ..api.meta import KindModel
from ..api.metavalidation import validate_object_meta
from ..storage import (
    KeyExistsError,
    KeyNotFoundError,
    PreconditionFailedError,
    StorageError,
    Store,
    StoredObject,
)
from . import errors
from .decoding import FieldValidation, check_object
from .fieldmanager import ApplyConflictError, FieldManager, conflict_message, render_path
from .patching import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    SUPPORTED_PATCH_TYPES,
    apply_json_patch,
    apply_merge_patch,
)
from .selectors import FieldSelector, LabelSelector
from .strategicmerge import apply_strategic_merge_patch
from .strategy import Strategy

_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

log = logging.getLogger("apiserver")


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class WriteOptions:
    dry_run: bool = False
    field_manager: str = ""
    field_validation: FieldValidation = FieldValidation.WARN
    force: bool = False
    user: str = ""
    """The authenticated name of who asks, for admission (empty if unknown)."""


@dataclass(frozen=True)
class DeleteOptions:
    dry_run: bool = False
    precondition_uid: str | None = None
    precondition_resource_version: str | None = None


@dataclass(frozen=True)
class ListOptions:
    label_selector: LabelSelector = field(default_factory=LabelSelector)
    field_selector: FieldSelector = field(default_factory=FieldSelector)
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""


@dataclass
class WriteResult:
    """The object to answer with, the HTTP code, and warnings for the client."""

    obj: StoredObject
    code: int = 200
    warnings: list[str] = field(default_factory=list)
    deleted: bool = False


@dataclass
class ListResult:
    items: list[StoredObject]
    revision: int
    continue_token: str = ""


def _unstored(obj: dict[str, Any]) -> StoredObject:
    """A dry-run result: what would have been stored, never written."""
    return StoredObject("", 0, orjson.dumps(obj), obj)


class Registry:
    """One served resource: its strategy over a store."""

    def __init__(self, strategy: Strategy[Any], store: Store) -> None:
        self.strategy = strategy
        self.resource = strategy.resource
        self.store = store
        self.field_manager = FieldManager(
            strategy.model, self.resource.group_version, has_status=strategy.has_status
        )
        self.field_getters = strategy.field_getters()

    # -- helpers -----------------------------------------------------------------

    def _key(self, namespace: str | None, name: str) -> str:
        return self.resource.key(namespace, name)

    def _storage_error(self, err: StorageError, name: str) -> errors.StatusError:
        return errors.from_storage(err, self.resource.plural, self.resource.group, name)

    def _invalid(self, name: str, errs: list[FieldError]) -> errors.StatusError:
        return errors.invalid(self.resource.kind, self.resource.group, name, errs)

    def _check_type_meta(self, obj: dict[str, Any], *, required: bool = False) -> None:
        """apiVersion and kind, if sent, must name this resource (400 otherwise)."""
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        if required and (not api_version or not kind):
            raise errors.bad_request("apiVersion and kind must be set in the applied configuration")
        if api_version is not None and api_version != self.resource.group_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API"
                f" version ({self.resource.group_version})"
            )
        if kind is not None and kind != self.resource.kind:
            raise errors.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({self.resource.kind})"
            )
        if not isinstance(obj.get("metadata", {}), dict):
            raise self._invalid(
                "",
                [
                    fielderr.type_invalid(
                        "metadata", obj.get("metadata"), "metadata in body must be of type object"
                    )
                ],
            )
        obj["apiVersion"] = self.resource.group_version
        obj["kind"] = self.resource.kind

    def _check_types(self, obj: dict[str, Any], opts: WriteOptions) -> tuple[KindModel, list[str]]:
        """The strict parse: unknown fields per fieldValidation, type errors as 422.

        Returns the parsed model and the warnings for the client.
        """
        model, unknown, errs = check_object(obj, self.strategy.model)
        warnings: list[str] = []
        if unknown:
            if opts.field_validation is FieldValidation.STRICT:
                fields = ", ".join(f'unknown field "{u}"' for u in unknown)
                raise errors.bad_request(
                    f'{self.resource.kind} in version "{self.resource.version}" cannot be handled as a'
                    f" {self.resource.kind}: strict decoding error: {fields}"
                )
            if opts.field_validation is FieldValidation.WARN:
                warnings = [f'unknown field "{u}"' for u in unknown]
        if errs:
            raise self._invalid(obj.get("metadata", {}).get("name") or "", errs)
        assert model is not None
        return typing.cast(KindModel, model), warnings

    def _validate(
        self,
        obj: dict[str, Any],
        opts: WriteOptions,
        check: Callable[[Any], list[FieldError]],
    ) -> list[str]:
        """Types, then metadata and the kind's own rules, all reported together; returns warnings."""
        model, warnings = self._check_types(obj, opts)
        errs = validate_object_meta(
            model.metadata,
            namespaced=self.resource.namespaced,
            name_errors=self.strategy.name_errors,
        )
        errs += check(model)
        if errs:
            raise self._invalid(obj.get("metadata", {}).get("name") or "", errs)
        return warnings

    def _model(self, obj: dict[str, Any]) -> KindModel:
        """The model of an already stored object (trusted, so no unknown-field handling)."""
        model, _, errs = check_object(copy.deepcopy(obj), self.strategy.model)
        if model is None:
            raise errors.internal(f"stored object does not match its schema: {errs[:3]}")
        return typing.cast(KindModel, model)

    def _manager(self, opts: WriteOptions, user_agent: str) -> str:
        if opts.field_manager:
            return opts.field_manager
        return (user_agent.split("/", 1)[0] or "unknown").strip()[:128]

    # -- create ------------------------------------------------------------------

    async def create(
        self,
        namespace: str | None,
        body: dict[str, Any],
        opts: WriteOptions,
        *,
        user_agent: str = "",
        manager_fields: bool = True,
    ) -> WriteResult:
        obj = body
        self._check_type_meta(obj)
        meta = obj.setdefault("metadata", {})
        if self.resource.namespaced:
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            if namespace:
                meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if (
            not meta.get("name")
            and isinstance(meta.get("generateName"), str)
            and meta["generateName"]
        ):
            meta["name"] = meta["generateName"] + "".join(
                secrets.choice(_NAME_SUFFIX_ALPHABET) for _ in range(5)
            )
        for server_set in (
            "uid",
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ):
            meta.pop(server_set, None)
        meta["uid"] = str(uuid.uuid4())
        now = now_rfc3339()
        meta["creationTimestamp"] = now
        meta["generation"] = 1
        if self.strategy.has_status:
            obj.pop("status", None)
        _, warnings = self._check_types(obj, opts)  # defaults need well-typed input
        self.strategy.prepare_for_create(obj)
        self._validate(obj, opts, self.strategy.validate)
        self.strategy.admit_create(obj, user=opts.user, dry_run=opts.dry_run)
        if manager_fields:
            meta.pop("managedFields", None)
            self.field_manager.update(None, obj, self._manager(opts, user_agent), now=now)
        name = meta["name"]
        if opts.dry_run:
            existing = await self._get_stored(namespace, name)
            if existing is not None:
                raise errors.already_exists(self.resource.plural, self.resource.group, name)
            return WriteResult(_unstored(obj), 201, warnings)
        try:
            stored = await self.store.create(self._key(namespace, name), obj)
        except StorageError as err:
            raise self._storage_error(err, name) from err
        return WriteResult(stored, 201, warnings)

    # -- get & list ----------------------------------------------------------------

    async def _get_stored(self, namespace: str | None, name: str) -> StoredObject | None:
        try:
            return await self.store.get(self._key(namespace, name))
        except StorageError as err:
            raise self._storage_error(err, name) from err

    async def get(self, namespace: str | None, name: str) -> StoredObject:
        stored = await self._get_stored(namespace, name)
        if stored is None:
            raise errors.not_found(self.resource.plural, self.resource.group, name)
        return stored

    def matches(self, obj: dict[str, Any], opts: ListOptions) -> bool:
        if not opts.label_selector.empty and not opts.label_selector.matches(
            obj.get("metadata", {}).get("labels")
        ):
            return False
        return opts.field_selector.empty or opts.field_selector.matches(obj, self.field_getters)

    async def list(self, namespace: str | None, opts: ListOptions) -> ListResult:
        revision, start = await self._list_start(opts)
        name = opts.field_selector.exact("metadata.name")
        if (
            name is not None
            and not opts.continue_token
            and (namespace or not self.resource.namespaced)
        ):
            # One key, not a scan: how kubectl wait and delete look at one object.
            return await self._list_one(namespace, name, opts, revision)
        return await self._scan(namespace, opts, revision, start)

    async def _scan(
        self, namespace: str | None, opts: ListOptions, revision: int | None, start: str
    ) -> ListResult:
        prefix = self.resource.key_prefix(namespace)
        filtered = not (opts.label_selector.empty and opts.field_selector.empty)
        items: list[StoredObject] = []
        at = revision
        while True:
            want = opts.limit - len(items) if opts.limit else 0
            batch = max(want, 64) if filtered and want else want
            try:
                page = await self.store.list(prefix, revision=at, start=start, limit=batch)
            except StorageError as err:
                raise self._storage_error(err, "") from err
            at = page.revision
            for i, item in enumerate(page.items):
                if not filtered or self.matches(item.obj, opts):
                    items.append(item)
                    if opts.limit and len(items) == opts.limit:
                        more = page.more or i + 1 < len(page.items)
                        token = self._continue_token(page.revision, item.key) if more else ""
                        return ListResult(items, page.revision, token)
            if not page.more or not page.items:
                return ListResult(items, page.revision)
            start = page.items[-1].key + "\x00"

    async def _list_one(
        self, namespace: str | None, name: str, opts: ListOptions, revision: int | None
    ) -> ListResult:
        """A list pinned to one name: a one-key read whose revision comes from the same snapshot."""
        key = self._key(namespace, name)
        try:
            page = await self.store.list(key, revision=revision, limit=1)
        except StorageError as err:
            raise self._storage_error(err, name) from err
        items = [i for i in page.items if i.key == key and self.matches(i.obj, opts)]
        return ListResult(items, page.revision)

    async def _list_start(self, opts: ListOptions) -> tuple[int | None, str]:
        """The revision to read at and the first key, from resourceVersion and continue."""
        if opts.continue_token:
            revision, start = self._decode_continue(opts.continue_token)
            return revision, start
        rv = opts.resource_version
        if not rv or rv == "0":
            return None, ""
        revision = parse_resource_version(rv)
        exact = opts.resource_version_match == "Exact" or (
            not opts.resource_version_match and opts.limit > 0
        )
        if revision > self.store.revision and revision > await self.current_revision():
            raise errors.timeout(
                f"Too large resource version: {revision}, current: {self.store.revision}",
                [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            )
        return (revision if exact else None), ""

    async def current_revision(self) -> int:
        """The store's newest revision: another replica may have handed out a newer one than
        this process has seen."""
        try:
            return await self.store.current_revision()
        except StorageError as err:
            raise self._storage_error(err, "") from err

    def _continue_token(self, revision: int, last_key: str) -> str:
        token = {"v": "meta.k8s.io/v1", "rv": revision, "start": last_key + "\x00"}
        return base64.urlsafe_b64encode(orjson.dumps(token)).decode()

    def _decode_continue(self, token: str) -> tuple[int, str]:
        try:
            data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
            revision = int(data["rv"])
            start = str(data["start"])
        except (ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
            raise errors.bad_request(f"continue key is not valid: {exc}") from exc
        prefix = self.resource.key_prefix(None)
        if data.get("v") != "meta.k8s.io/v1" or not start.startswith(prefix):
            raise errors.bad_request("continue key is not valid: not a token for this resource")
        if revision < self.store.compacted_revision:
            raise errors.expired(
                "The provided continue parameter is too old to display a consistent list result."
                " You can start a new list without the continue parameter."
            )
        return revision, start

    # -- update, patch, apply ----------------------------------------------------

    async def update(
        self,
        namespace: str | None,
        name: str,
        body: dict[str, Any],
        opts: WriteOptions,
        *,
        subresource: str = "",
        user_agent: str = "",
    ) -> WriteResult:
        """PUT: the body replaces the object; its resourceVersion must match (409 otherwise)."""
        self._check_type_meta(body)
        self._check_identity(body, namespace, name)
        if not body.get("metadata", {}).get("resourceVersion"):
            raise self._invalid(
                name,
                [
                    fielderr.invalid(
                        "metadata.resourceVersion", "", "must be specified for an update"
                    )
                ],
            )

        def mutate(current: StoredObject) -> dict[str, Any]:
            return copy.deepcopy(body)

        return await self._guaranteed_update(
            namespace,
            name,
            mutate,
            opts,
            subresource=subresource,
            user_agent=user_agent,
            retry=False,
        )

    async def patch(
        self,
        namespace: str | None,
        name: str,
        patch: bytes,
        patch_type: str,
        opts: WriteOptions,
        *,
        subresource: str = "",
        user_agent: str = "",
        apply_config: dict[str, Any] | None = None,
    ) -> WriteResult:
        kind, group = self.resource.kind, self.resource.group
        if patch_type == APPLY_PATCH:
            assert apply_config is not None
            return await self._apply(namespace, name, apply_config, opts, subresource, user_agent)

        def mutate(current: StoredObject) -> dict[str, Any]:
            if patch_type == JSON_PATCH:
                new = apply_json_patch(current.copy(), patch, kind, group, name)
            elif patch_type == MERGE_PATCH:
                new = apply_merge_patch(current.copy(), patch)
            elif patch_type == STRATEGIC_MERGE_PATCH:
                new = apply_strategic_merge_patch(current.copy(), patch, self.field_manager.schema)
            else:
                raise errors.unsupported_media_type(patch_type, SUPPORTED_PATCH_TYPES)
            self._check_type_meta(new)
            self._check_identity(new, namespace, name)
            return new

        return await self._guaranteed_update(
            namespace,
            name,
            mutate,
            opts,
            subresource=subresource,
            user_agent=user_agent,
            retry=True,
        )

    async def _apply(
        self,
        namespace: str | None,
        name: str,
        config: dict[str, Any],
        opts: WriteOptions,
        subresource: str,
        user_agent: str,
    ) -> WriteResult:
        if not opts.field_manager:
            raise self._invalid(
                name, [fielderr.required("fieldManager", "is required for apply patch")]
            )
        self._check_type_meta(config, required=True)
        self._check_identity(config, namespace, name)
        manager = opts.field_manager
        while True:  # a lost race means another write committed: progress
            current = await self._get_stored(namespace, name)
            if current is None:
                if subresource:
                    raise errors.not_found(self.resource.plural, self.resource.group, name)
                created = self._applied(None, config, opts, name)
                created.setdefault("metadata", {})["name"] = name
                try:
                    return await self.create(
                        namespace, created, opts, user_agent=user_agent, manager_fields=False
                    )
                except errors.StatusError as err:
                    if err.reason == "AlreadyExists":
                        continue
                    raise
            pinned = self._check_pinned(config, current, name)
            if pinned and pinned != str(current.revision):
                raise errors.conflict(
                    self.resource.plural, self.resource.group, name, errors.MODIFIED
                )
            merged = self._applied(current, config, opts, name, subresource)
            try:
                return await self._write_update(
                    current, merged, opts, subresource, manager, user_agent, record=False
                )
            except _Retry:
                continue

    def _applied(
        self,
        current: StoredObject | None,
        config: dict[str, Any],
        opts: WriteOptions,
        name: str,
        subresource: str = "",
    ) -> dict[str, Any]:
        live = current.copy() if current is not None else None
        try:
            return self.field_manager.apply(
                live,
                copy.deepcopy(config),
                opts.field_manager,
                force=opts.force,
                subresource=subresource,
                now=now_rfc3339(),
            )
        except ApplyConflictError as exc:
            causes = [
                {
                    "reason": "FieldManagerConflict",
                    "message": f"conflict with {c.owner()}",
                    "field": render_path(c.path),
                }
                for c in exc.conflicts
            ]
            raise errors.StatusError(
                409,
                "Conflict",
                conflict_message(exc.conflicts),
                details={
                    "name": name,
                    "group": self.resource.group,
                    "kind": self.resource.plural,
                    "causes": causes,
                },
            ) from exc

    def _check_identity(self, obj: dict[str, Any], namespace: str | None, name: str) -> None:
        meta = obj.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        if (
            self.resource.namespaced
            and meta.get("namespace")
            and namespace
            and meta["namespace"] != namespace
        ):
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )

    async def _guaranteed_update(
        self,
        namespace: str | None,
        name: str,
        mutate: Callable[[StoredObject], dict[str, Any]],
        opts: WriteOptions,
        *,
        subresource: str,
        user_agent: str,
        retry: bool,
    ) -> WriteResult:
        """Read, mutate, write with the read revision as precondition; retry lost races.

        A resourceVersion the client put in the object pins it: a mismatch is a 409, never
        retried. Otherwise (patches without one) a concurrent write just means try again.
        """
        manager = self._manager(opts, user_agent)
        while True:  # a lost race means another write committed: progress
            current = await self.get(namespace, name)
            new = mutate(current)
            sent_rv = self._check_pinned(new, current, name)
            if sent_rv and sent_rv != str(current.revision):
                raise errors.conflict(
                    self.resource.plural, self.resource.group, name, errors.MODIFIED
                )
            try:
                return await self._write_update(
                    current, new, opts, subresource, manager, user_agent, record=True
                )
            except _Retry:
                # A resourceVersion the patch itself pinned fails the check above on the
                # next attempt; anything else is a lost race, so read again and re-apply.
                if not retry:
                    raise errors.conflict(
                        self.resource.plural, self.resource.group, name, errors.MODIFIED
                    ) from None

    def _check_pinned(self, new: dict[str, Any], current: StoredObject, name: str) -> str | None:
        """The resourceVersion a write pins, after checking it and the uid are well-formed.

        A uid that differs from the stored one is an attempt to change an immutable field.
        """
        meta = new.get("metadata") or {}
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
        return sent_rv

    async def _write_update(
        self,
        current: StoredObject,
        new: dict[str, Any],
        opts: WriteOptions,
        subresource: str,
        manager: str,
        user_agent: str,
        *,
        record: bool,
    ) -> WriteResult:
        old = current.obj
        name = old["metadata"]["name"]
        new = self._carry_over(old, new, subresource)
        old_model = self._model(old)
        if subresource == "status":
            warnings = self._validate(
                new, opts, lambda m: self.strategy.validate_status_update(m, old_model)
            )
        else:
            warnings = self._validate(
                new, opts, lambda m: self.strategy.validate_update(m, old_model)
            )
        old_finalizers = set(old["metadata"].get("finalizers") or [])
        new_finalizers = set(new["metadata"].get("finalizers") or [])
        if old["metadata"].get("deletionTimestamp") and not new_finalizers <= old_finalizers:
            raise self._invalid(
                name,
                [
                    fielderr.forbidden(
                        "metadata.finalizers",
                        "no new finalizers can be added if the object is being deleted",
                    )
                ],
            )
        if _same_object(old, new) and (record or _same_managers(old, new)):
            # An apply that only adds a co-owner still records it (timestamps aside).
            return WriteResult(current, 200, warnings)
        if record:
            self.field_manager.update(old, new, manager, subresource=subresource, now=now_rfc3339())
        if opts.dry_run:
            return WriteResult(_unstored(new), 200, warnings)
        key = current.key
        try:
            stored = await self.store.update(key, new, expected_revision=current.revision)
        except PreconditionFailedError:
            raise _Retry() from None
        except KeyNotFoundError as err:
            raise self._storage_error(err, name) from err
        except StorageError as err:
            raise self._storage_error(err, name) from err
        if new["metadata"].get("deletionTimestamp") and not new_finalizers:
            # The last finalizer is gone: the object goes now (watchers see MODIFIED, DELETED).
            try:
                await self.store.delete(key, expected_revision=stored.revision)
            except (KeyNotFoundError, PreconditionFailedError):
                pass
            except StorageError as err:
                # The update is stored: answer it. The object waits, without finalizers,
                # for the next write (or delete) to remove it.
                log.warning("%s: removing %s after its last finalizer failed: %s", key, name, err)
        return WriteResult(stored, 200, warnings)

    def _carry_over(
        self, old: dict[str, Any], new: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        """What a write may not change comes from the stored object (PrepareForUpdate)."""
        if subresource == "status":
            result = copy.deepcopy(old)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            if "managedFields" in new.get("metadata", {}):
                result["metadata"]["managedFields"] = new["metadata"]["managedFields"]
            return result
        result = new
        meta = result.setdefault("metadata", {})
        old_meta = old["metadata"]
        for name in (
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ):
            if name in old_meta:
                meta[name] = old_meta[name]
            else:
                meta.pop(name, None)
        meta.pop("selfLink", None)
        meta["resourceVersion"] = old_meta.get("resourceVersion")
        if self.strategy.has_status:
            if "status" in old:
                result["status"] = old["status"]
            else:
                result.pop("status", None)
        self.strategy.prepare_for_update(result, old)
        generation = old_meta.get("generation", 1)
        meta["generation"] = generation + 1 if _spec(result) != _spec(old) else generation
        return result

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
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp"):
                    return WriteResult(current, 200)
                marked = current.copy()
                marked["metadata"]["deletionTimestamp"] = now_rfc3339()
                marked["metadata"]["deletionGracePeriodSeconds"] = 0
                marked["metadata"]["generation"] = meta.get("generation", 1) + 1
                if opts.dry_run:
                    return WriteResult(_unstored(marked), 200)
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
                deleted = await self.store.delete(current.key, expected_revision=current.revision)
            except PreconditionFailedError:
                continue
            except StorageError as err:
                raise self._storage_error(err, name) from err
            return WriteResult(deleted, 200, deleted=True)

    async def delete_collection(
        self, namespace: str | None, list_opts: ListOptions, opts: DeleteOptions
    ) -> builtins.list[StoredObject]:
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
        return deleted


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


def parse_resource_version(value: str) -> int:
    try:
        revision = int(value)
    except ValueError:
        raise errors.bad_request(f'invalid resource version "{value}"') from None
    if revision < 0:
        raise errors.bad_request(f'invalid resource version "{value}"')
    return revision


__all__ = [
    "DeleteOptions",
    "KeyExistsError",
    "ListOptions",
    "ListResult",
    "Registry",
    "WriteOptions",
    "WriteResult",
    "now_rfc3339",
    "parse_resource_version",
]

"""Reading a served resource: get, list (pages over one snapshot, selectors, continue
tokens, resourceVersion semantics) and what a watch needs, over any readable store.

Stored kinds (``Registry``) and computed kinds (``ComputedResource``) read the same way;
only where their objects come from differs.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from ..storage import ReadableStore, StorageError, StoredObject
from ..storage.computed import ComputedStore
from . import errors
from .integers import INT64_MAX
from .rest import ListOptions, ListResult
from .strategy import Strategy


class StoreReader:
    """get, list and watch of one resource over a readable store."""

    subresource = ""

    def __init__(self, strategy: Strategy[Any], store: ReadableStore) -> None:
        self.strategy = strategy
        self.resource = strategy.resource
        self.store = store
        self.field_getters = strategy.field_getters()

    def _key(self, namespace: str | None, name: str) -> str:
        return self.resource.key(namespace, name)

    def _storage_error(self, err: StorageError, name: str) -> errors.StatusError:
        return errors.from_storage(err, self.resource.plural, self.resource.group, name)

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
        if revision is None and not opts.continue_token:
            found = await self._list_indexed(namespace, opts)
            if found is not None:
                return found
        return await self._scan(namespace, opts, revision, start)

    async def _list_indexed(self, namespace: str | None, opts: ListOptions) -> ListResult | None:
        """A current list whose field selector pins fields the store indexes: only the keys
        the index names are read, each matched in full. None when there is no such index,
        or more keys than one page of ``limit`` (then the scan pages as usual)."""
        store = self.store
        if not isinstance(store, ComputedStore) or opts.field_selector.empty:
            return None
        pinned = {
            f: value
            for f in store.indexed_fields
            if (value := opts.field_selector.exact(f)) is not None
        }
        try:
            keys = store.indexed(pinned) if pinned else None
        except StorageError as err:
            raise self._storage_error(err, "") from err
        prefix = self.resource.key_prefix(namespace)
        if keys is None:
            return None
        keys = [k for k in keys if k.startswith(prefix)]
        if opts.limit and len(keys) > opts.limit:
            return None
        revision = store.revision
        items = []
        for key in keys:
            item = await store.get(key)
            if item is not None and self.matches(item.obj, opts):
                items.append(item)
        return ListResult(items, revision)

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


def parse_resource_version(value: str) -> int:
    try:
        revision = int(value) if len(value) <= 20 else -1
    except ValueError:
        raise errors.bad_request(f'invalid resource version "{value}"') from None
    if not 0 <= revision <= INT64_MAX:
        raise errors.bad_request(f'invalid resource version "{value}"')
    return revision

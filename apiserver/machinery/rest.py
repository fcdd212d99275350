"""What a served resource can do: options, results and the small capability interfaces.

As in Kubernetes' generic registry (``rest.Getter``, ``rest.Creater``, …), a resource
implements the verbs it supports and nothing else: a stored kind all of them (``Registry``),
its status subresource get, update, patch and apply (``StatusSubresource``), an action
subresource a named create (``ActionSubresource``), a computed
kind get, list and watch (``ComputedResource``), a review kind only create
(``ReviewResource``). The handler asks a resource for a capability and answers 405 when it
has none, so no resource pretends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import orjson

from ..storage import ReadableStore, StoredObject
from .decoding import FieldValidation
from .selectors import FieldGetter, FieldSelector, LabelSelector
from .user import NOBODY, UserInfo

if TYPE_CHECKING:
    from .resource import ResourceType
    from .strategy import Strategy


@dataclass(frozen=True)
class WriteOptions:
    dry_run: bool = False
    field_manager: str = ""
    field_validation: FieldValidation = FieldValidation.WARN
    force: bool = False
    user: UserInfo = NOBODY
    """Who asks, for admission and the default field manager."""
    user_agent: str = ""


@dataclass(frozen=True)
class DeleteOptions:
    dry_run: bool = False
    precondition_uid: str | None = None
    precondition_resource_version: str | None = None
    user: UserInfo = NOBODY


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


def unstored(obj: dict[str, Any]) -> StoredObject:
    """An answer that was never written: a dry run, or a review."""
    return StoredObject("", 0, orjson.dumps(obj), obj)


class UpdatedObject(Protocol):
    """How a write computes the object to store from the stored one (Kubernetes'
    ``rest.UpdatedObjectInfo``). The registry's one update path calls it inside its retry
    loop, with the same precondition and conflict handling for every write; ``updates``
    holds the ones PUT, PATCH, apply and actions use."""

    @property
    def records_manager(self) -> bool:
        """Whether the registry records the writer in ``managedFields`` (False when the
        computed object carries them already: apply)."""
        ...

    def created(self) -> dict[str, Any] | None:
        """The object to create when none is stored, or None (then the write is a 404)."""
        ...

    def preconditions(self) -> dict[str, Any] | None:
        """The metadata whose ``resourceVersion`` and ``uid`` the write is conditional on,
        when the request states them apart from the object it computes (an applied
        configuration); None: the computed object's own."""
        ...

    def updated(self, current: StoredObject) -> dict[str, Any]:
        """The object to store in place of ``current`` (which is left unchanged)."""
        ...


class Resource(Protocol):
    """Every served resource: its identity and its kind's strategy (model, columns)."""

    @property
    def strategy(self) -> Strategy[Any]: ...

    @property
    def resource(self) -> ResourceType: ...

    @property
    def subresource(self) -> str:
        """ "" for the resource itself, else the subresource served (``status``)."""
        ...

    @property
    def field_getters(self) -> dict[str, FieldGetter]: ...


@runtime_checkable
class Getter(Protocol):
    async def get(self, namespace: str | None, name: str) -> StoredObject: ...


@runtime_checkable
class Lister(Protocol):
    async def list(self, namespace: str | None, opts: ListOptions) -> ListResult: ...


@runtime_checkable
class Watcher(Protocol):
    """A resource whose collection can be watched: list, and the store its events come from."""

    store: ReadableStore

    async def list(self, namespace: str | None, opts: ListOptions) -> ListResult: ...

    def matches(self, obj: dict[str, Any], opts: ListOptions) -> bool: ...

    async def current_revision(self) -> int: ...


@runtime_checkable
class Creater(Protocol):
    async def create(
        self, namespace: str | None, body: dict[str, Any], opts: WriteOptions
    ) -> WriteResult: ...


@runtime_checkable
class NamedCreater(Protocol):
    """A POST to a named object's subresource (``pods/<name>/binding``)."""

    async def create_named(
        self, namespace: str | None, name: str, body: dict[str, Any], opts: WriteOptions
    ) -> WriteResult: ...


@runtime_checkable
class Updater(Protocol):
    async def update(
        self, namespace: str | None, name: str, body: dict[str, Any], opts: WriteOptions
    ) -> WriteResult: ...


@runtime_checkable
class Patcher(Protocol):
    async def patch(
        self, namespace: str | None, name: str, patch: bytes, patch_type: str, opts: WriteOptions
    ) -> WriteResult: ...


@runtime_checkable
class Applier(Protocol):
    """Server-side apply: its own operation, not a patch type."""

    async def apply(
        self, namespace: str | None, name: str, config: dict[str, Any], opts: WriteOptions
    ) -> WriteResult: ...


@runtime_checkable
class Deleter(Protocol):
    async def delete(
        self, namespace: str | None, name: str, opts: DeleteOptions
    ) -> WriteResult: ...


@runtime_checkable
class CollectionDeleter(Protocol):
    async def delete_collection(
        self, namespace: str | None, list_opts: ListOptions, opts: DeleteOptions
    ) -> ListResult: ...

"""The per-kind strategy: everything special about a kind, and nothing generic.

Like a Kubernetes registry strategy, a kind says here what its model is, whether it has
a status subresource, how to default and validate it, which extra fields are selectable
and which columns ``kubectl get`` prints. The generic registry drives it; no HTTP or
storage code belongs in a strategy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

from ..api import KindModel, dns1123_subdomain_errors
from ..api.field import FieldError
from .conversion import Conversion
from .resource import VERBS, ResourceType
from .selectors import FieldGetter
from .table import AGE_COLUMN, NAME_COLUMN, Column, string_at

M = TypeVar("M", bound=KindModel)


class Action(Protocol):
    """What one action subresource of a kind does (served by ``action.ActionSubresource``)."""

    subresource: str
    """Its path segment (``binding``)."""
    group_version: str
    """The ``apiVersion`` of its body (``v1``)."""
    kind: str
    """The kind of its body (``Binding``)."""
    model: type[KindModel]

    def validate(self, body: Any) -> list[FieldError]:
        """Problems with the parsed body, by field."""
        ...

    def apply(self, parent: dict[str, Any], body: Any) -> dict[str, Any]:
        """The parent as the action leaves it (``parent`` is a copy), or a ``StatusError``
        (409 when the parent's state forbids the action)."""
        ...


@dataclass(frozen=True)
class ExclusiveKey:
    """A storage key an object holds alone while it exists (a device it reserves): created
    with the object in one transaction, so that of two objects wanting it only one is
    stored, and deleted with it."""

    key: str
    value: dict[str, Any]
    """What the key holds: who holds it, for whoever looks."""
    field: str
    """The field of the object that asks for it, for the Conflict's cause."""
    description: str
    """What it is, for the Conflict's message (``device gpu.example.com/node-1/gpu-0``)."""


class Strategy(Generic[M]):
    """Defaults are those of a simple custom resource; kinds override what differs.

    A kind names itself with the class attributes below; the group is given when the
    server is assembled, because it is a setting (see DESIGN §3).
    """

    model: type[M]
    version: ClassVar[str]
    kind: ClassVar[str]
    plural: ClassVar[str]
    singular: ClassVar[str]
    namespaced: ClassVar[bool] = False
    short_names: ClassVar[tuple[str, ...]] = ()
    categories: ClassVar[tuple[str, ...]] = ()
    has_status: ClassVar[bool] = False
    verbs: ClassVar[tuple[str, ...]] = VERBS
    """What the kind is served for: a stored kind every verb, a computed kind
    ``READ_ONLY_VERBS``, a review kind ``CREATE_ONLY_VERBS``."""
    create_rate_limited: ClassVar[bool] = False
    """Creates may be refused with 429 by a per-user limit (an admission plugin the server
    assembles); OpenAPI documents the 429."""
    status_on_create: ClassVar[bool] = False
    """A create keeps the status it carries (a Node is registered with its status); otherwise
    a kind with a status subresource starts without one."""
    actions: ClassVar[tuple[Action, ...]] = ()
    """Subresources that act on a stored object (``pods/binding``), served by
    ``ActionSubresource``."""
    returns_deleted_object: ClassVar[bool] = False
    """A delete answers with the deleted object, not a ``Status`` (as upstream's store does
    for the kind: its generated clients read the answer as the kind)."""
    conversion: ClassVar[Conversion | None] = None
    """Set when this strategy serves another version of a kind stored in
    ``conversion.stored_version``: its registry reads and writes through a
    ``ConvertingStore``, and the storage version's strategy owns everything else (the
    controllers, the sources)."""
    columns: ClassVar[tuple[Column, ...]] = ()
    extra_field_getters: ClassVar[Mapping[str, FieldGetter]] = {}

    def __init__(self, group: str) -> None:
        self.resource = ResourceType(
            group=group,
            version=self.version,
            kind=self.kind,
            plural=self.plural,
            singular=self.singular,
            namespaced=self.namespaced,
            short_names=self.short_names,
            categories=self.categories,
            verbs=self.verbs,
            returns_deleted_object=self.returns_deleted_object,
            storage_version=self.conversion.stored_version if self.conversion else "",
        )

    @classmethod
    def for_group(cls, group: str) -> Self:
        return cls(group)

    def name_errors(self, name: str) -> list[str]:
        """Problems with an object name; DNS subdomains by default."""
        return dns1123_subdomain_errors(name)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        """Apply defaults to a new object (the status has already been dropped). Runs before
        the object is parsed, so it must leave ill-typed parts alone for validation."""

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        """Adjust a main-resource write before it is compared and validated (what the
        server keeps from ``old`` is already carried over), e.g. apply the defaults a create
        applies, so that re-sending an object without them is not a change."""

    def prepare_for_status_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        """Adjust a status write before it is compared and validated (``obj`` is the stored
        object with the new status), e.g. the status defaults a create applies."""

    def pending_finalizers(self, obj: dict[str, Any]) -> list[str]:
        """What must be done before a deleted object may go: ``metadata.finalizers``, and a
        kind's own finalizers (a Namespace's ``spec.finalizers``) if it has any."""
        finalizers = (obj.get("metadata") or {}).get("finalizers")
        return list(finalizers) if isinstance(finalizers, list) else []

    def prepare_for_delete(self, obj: dict[str, Any]) -> None:
        """Adjust an object that is marked for deletion and held by finalizers (e.g. the
        phase a Namespace reports while its content is deleted)."""

    def validate(self, obj: M) -> list[FieldError]:
        """Validate the kind-specific parts of a new object."""
        return []

    def validate_update(self, new: M, old: M) -> list[FieldError]:
        """Validate an update of the main resource; by default the same as a create."""
        return self.validate(new)

    def validate_status(self, obj: M) -> list[FieldError]:
        """Validate what the status subresource may write."""
        return []

    def exclusive_keys(self, obj: dict[str, Any]) -> list[ExclusiveKey]:
        """The keys a valid object holds alone (none by default). They must follow from
        fields an update cannot change: they are taken on create and freed on delete."""
        return []

    def validate_status_update(self, new: M, old: M) -> list[FieldError]:
        """Validate a status write against the stored object (``new`` carries its spec and
        metadata); by default only the new status is checked."""
        return self.validate_status(new)

    # -- derived, not meant to be overridden ---------------------------------------

    def field_getters(self) -> dict[str, FieldGetter]:
        getters: dict[str, FieldGetter] = {"metadata.name": string_at("metadata", "name")}
        if self.resource.namespaced:
            getters["metadata.namespace"] = string_at("metadata", "namespace")
        getters.update(self.extra_field_getters)
        return getters

    def table_columns(self) -> tuple[Column, ...]:
        return (NAME_COLUMN, *self.columns, AGE_COLUMN)

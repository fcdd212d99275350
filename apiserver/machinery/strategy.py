"""The per-kind strategy: everything special about a kind, and nothing generic.

Like a Kubernetes registry strategy, a kind says here what its model is, whether it has
a status subresource, how to default and validate it, which extra fields are selectable
and which columns ``kubectl get`` prints. The generic registry drives it; no HTTP or
storage code belongs in a strategy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar

from ..api.base import APIModel
from ..api.field import FieldError
from ..api.names import dns1123_subdomain_errors
from .resource import ResourceType
from .selectors import FieldGetter
from .table import AGE_COLUMN, NAME_COLUMN, Column

M = TypeVar("M", bound=APIModel)


def _meta_field(name: str) -> FieldGetter:
    def get(obj: dict[str, Any]) -> str | None:
        value = obj.get("metadata", {}).get(name)
        return value if isinstance(value, str) else None

    return get


class Strategy(Generic[M]):
    """Defaults are those of a simple custom resource; kinds override what differs."""

    model: type[M]
    resource: ResourceType
    has_status: ClassVar[bool] = False
    columns: ClassVar[tuple[Column, ...]] = ()
    extra_field_getters: ClassVar[Mapping[str, FieldGetter]] = {}

    def __init__(self, resource: ResourceType) -> None:
        self.resource = resource

    def name_errors(self, name: str) -> list[str]:
        """Problems with an object name; DNS subdomains by default."""
        return dns1123_subdomain_errors(name)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        """Apply defaults to a new object (the status has already been dropped)."""

    def validate(self, obj: M) -> list[FieldError]:
        """Validate the kind-specific parts of a new object."""
        return []

    def validate_update(self, new: M, old: M) -> list[FieldError]:
        """Validate an update of the main resource; by default the same as a create."""
        return self.validate(new)

    def validate_status(self, obj: M) -> list[FieldError]:
        """Validate what the status subresource may write."""
        return []

    # -- derived, not meant to be overridden ---------------------------------------

    def field_getters(self) -> dict[str, FieldGetter]:
        getters: dict[str, FieldGetter] = {"metadata.name": _meta_field("name")}
        if self.resource.namespaced:
            getters["metadata.namespace"] = _meta_field("namespace")
        getters.update(self.extra_field_getters)
        return getters

    def table_columns(self) -> tuple[Column, ...]:
        return (NAME_COLUMN, *self.columns, AGE_COLUMN)

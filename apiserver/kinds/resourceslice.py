"""ResourceSlice (``resource.k8s.io/v1``, standalone mode, with KEP-5234 mixins): cluster-scoped,
no status, printed like kubectl prints it (NAME, NODE, DRIVER, POOL, AGE)."""

from __future__ import annotations

from typing import Any, ClassVar

from ..api.field import FieldError
from ..api.resource import (
    DRA_GROUP,
    DRA_VERSION,
    ResourceSlice,
    set_taint_times,
    validate_resource_slice,
)
from ..machinery import Column, FieldGetter, Strategy, string_at
from ..toolkit.timestamps import now_rfc3339

_node = string_at("spec", "nodeName")


class ResourceSliceStrategy(Strategy[ResourceSlice]):
    model = ResourceSlice
    version = DRA_VERSION
    kind = "ResourceSlice"
    plural = "resourceslices"
    singular = "resourceslice"
    columns: ClassVar[tuple[Column, ...]] = (
        Column(
            "Node",
            "string",
            lambda obj: _node(obj) or "",
            "The node providing the devices, for node-local slices.",
        ),
        Column("Driver", "string", string_at("spec", "driver"), "The driver managing the devices."),
        Column(
            "Pool", "string", string_at("spec", "pool", "name"), "The pool the slice belongs to."
        ),
    )
    extra_field_getters: ClassVar[dict[str, FieldGetter]] = {
        "spec.nodeName": _node,
        "spec.driver": string_at("spec", "driver"),
        "spec.pool.name": string_at("spec", "pool", "name"),
    }

    @classmethod
    def upstream(cls) -> ResourceSliceStrategy:
        return cls(DRA_GROUP)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            set_taint_times(spec, now_rfc3339())

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        # Device taints get the time they were added; an unchanged taint keeps its time.
        spec = obj.get("spec")
        if isinstance(spec, dict):
            set_taint_times(spec, now_rfc3339(), old.get("spec"))

    def validate(self, obj: ResourceSlice) -> list[FieldError]:
        return validate_resource_slice(obj)

    def validate_update(self, new: ResourceSlice, old: ResourceSlice) -> list[FieldError]:
        return validate_resource_slice(new, old)

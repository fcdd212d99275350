"""The ways a write computes the object to store from the stored one.

Each is an ``UpdatedObject`` (``rest``) that the registry's one update path calls inside its
retry loop, so a lost race computes the object again from what won:

* ``Replacement``: PUT, the body replaces the object (its resourceVersion pins the write);
* ``Patched``: PATCH with a JSON patch, a merge patch or a strategic merge patch;
* ``Applied``: server-side apply, which may create the object;
* ``Mutation``: a change computed by code from the stored object (an action subresource).

As in Kubernetes (``handlers/patch.go`` and ``rest/update.go``), the mechanics of a patch
stay out of the store; the merge rules themselves are in ``patching`` (RFC 6902, RFC 7386),
``strategicmerge`` and ``fieldmanager`` (apply).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..api import field as fielderr
from ..api.field import FieldError
from ..storage import StoredObject
from ..toolkit import MERGE_PATCH, json_copy
from ..toolkit.timestamps import now_rfc3339
from . import errors
from .canonical import canonicalize_quantities
from .fieldmanager import ApplyConflictError, FieldManager, conflict_message, render_path
from .intake import BodyType, check_names, check_type_meta
from .patching import (
    JSON_PATCH,
    STRATEGIC_MERGE_PATCH,
    SUPPORTED_PATCH_TYPES,
    apply_json_patch,
    apply_merge_patch,
)
from .rest import WriteOptions
from .strategicmerge import apply_strategic_merge_patch
from .strategy import Strategy


@dataclass(frozen=True)
class Target:
    """The object a write is for: its kind (identity, merge schema, update hook) and name."""

    strategy: Strategy[Any]
    field_manager: FieldManager
    namespace: str | None
    name: str

    @property
    def body_type(self) -> BodyType:
        return BodyType(self.strategy.resource.group_version, self.strategy.resource.kind)

    def invalid(self, problems: list[FieldError]) -> errors.StatusError:
        resource = self.strategy.resource
        return errors.invalid(resource.kind, resource.group, self.name, problems)

    def check(self, obj: dict[str, Any], *, required: bool = False) -> None:
        """The object sent (or what a patch left) names this kind, and this object if it
        names one."""
        check_type_meta(obj, self.body_type, required=required)
        check_names(obj, self.namespace, self.name, namespaced=self.strategy.resource.namespaced)


class _OfStored:
    """An update of an object that exists (none is created), pinned by what it computes: a
    resourceVersion or uid in the new object (a PUT's, or one a patch sets)."""

    records_manager = True

    def created(self) -> dict[str, Any] | None:
        return None

    def preconditions(self) -> dict[str, Any] | None:
        return None


class Replacement(_OfStored):
    """PUT: the body replaces the object; it must carry the resourceVersion it replaces."""

    def __init__(self, target: Target, body: dict[str, Any]) -> None:
        target.check(body)
        if not body.get("metadata", {}).get("resourceVersion"):
            problem = fielderr.invalid(
                "metadata.resourceVersion", "", "must be specified for an update"
            )
            raise target.invalid([problem])
        self.body = body

    def updated(self, current: StoredObject) -> dict[str, Any]:
        return json_copy(self.body)


class Mutation(_OfStored):
    """A change computed from a copy of the stored object by ``mutate``."""

    def __init__(self, mutate: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.mutate = mutate

    def updated(self, current: StoredObject) -> dict[str, Any]:
        return self.mutate(current.copy())


class Patched(_OfStored):
    """A JSON, merge or strategic merge patch of the stored object."""

    def __init__(self, target: Target, patch: bytes, patch_type: str) -> None:
        if patch_type not in (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH):
            raise errors.unsupported_media_type(patch_type, SUPPORTED_PATCH_TYPES)
        self.target = target
        self.patch = patch
        self.patch_type = patch_type

    def updated(self, current: StoredObject) -> dict[str, Any]:
        target = self.target
        if self.patch_type == JSON_PATCH:
            resource = target.strategy.resource
            new = apply_json_patch(
                current.copy(), self.patch, resource.kind, resource.group, target.name
            )
        elif self.patch_type == MERGE_PATCH:
            new = apply_merge_patch(current.copy(), self.patch)
        else:
            new = apply_strategic_merge_patch(
                current.copy(), self.patch, target.field_manager.schema
            )
        target.check(new)
        return new


class Applied:
    """Server-side apply: the configuration merged into what its manager owns, creating the
    object if there is none (only through the object itself, not a subresource)."""

    records_manager = False
    """The merge computes the managed fields itself."""

    def __init__(
        self, target: Target, config: dict[str, Any], opts: WriteOptions, subresource: str
    ) -> None:
        if not opts.field_manager:
            raise target.invalid([fielderr.required("fieldManager", "is required for apply patch")])
        target.check(config, required=True)
        self.target = target
        self.config = config
        self.manager = opts.field_manager
        self.force = opts.force
        self.subresource = subresource

    def created(self) -> dict[str, Any] | None:
        if self.subresource:
            return None
        created = self._merged(None)
        created.setdefault("metadata", {})["name"] = self.target.name
        return created

    def preconditions(self) -> dict[str, Any] | None:
        # The merge keeps the stored resourceVersion: what pins the write is the configuration's.
        return dict(self.config.get("metadata") or {})

    def updated(self, current: StoredObject) -> dict[str, Any]:
        return self._merged(current)

    def _merged(self, current: StoredObject | None) -> dict[str, Any]:
        target = self.target
        live = current.copy() if current is not None else None
        normalized = json_copy(self.config)
        canonicalize_quantities(normalized, target.field_manager.schema)
        if live is not None and not self.subresource:
            target.strategy.prepare_for_update(normalized, live)
        try:
            return target.field_manager.apply(
                live,
                json_copy(self.config),
                self.manager,
                force=self.force,
                subresource=self.subresource,
                now=now_rfc3339(),
                normalized=normalized,
            )
        except ApplyConflictError as exc:
            raise _apply_conflict(target, exc) from exc


def _apply_conflict(target: Target, exc: ApplyConflictError) -> errors.StatusError:
    """409 naming each field another manager owns, as kube-apiserver answers."""
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {c.owner()}",
            "field": render_path(c.path),
        }
        for c in exc.conflicts
    ]
    resource = target.strategy.resource
    return errors.StatusError(
        409,
        "Conflict",
        conflict_message(exc.conflicts),
        details={
            "name": target.name,
            "group": resource.group,
            "kind": resource.plural,
            "causes": causes,
        },
    )

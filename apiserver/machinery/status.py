"""The status subresource of a stored kind: get, update, patch and apply of ``/status``.

Its own update strategy, as Kubernetes' status strategies embed the main one: a write to
``/status`` changes the status and nothing else (spec and metadata come from the stored
object, managed fields aside), and is validated by the kind's status rules. The generic
update code is the registry's; only what may change differs.
"""

from __future__ import annotations

from typing import Any

from ..api.field import FieldError
from ..storage import StoredObject
from ..toolkit import json_copy
from .registry import Registry
from .rest import WriteOptions, WriteResult
from .strategy import Strategy


class StatusUpdate:
    subresource = "status"

    def __init__(self, strategy: Strategy[Any]) -> None:
        self.strategy = strategy

    def carry_over(self, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        result = json_copy(old)
        if "status" in new:
            result["status"] = new["status"]
        else:
            result.pop("status", None)
        if "managedFields" in new.get("metadata", {}):
            result["metadata"]["managedFields"] = new["metadata"]["managedFields"]
        self.strategy.prepare_for_status_update(result, old)
        return result

    def validate_update(self, new: Any, old: Any) -> list[FieldError]:
        return self.strategy.validate_status_update(new, old)


class StatusSubresource:
    """``<resource>/status`` of a stored kind with a status."""

    subresource = "status"

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.strategy = registry.strategy
        self.resource = registry.resource
        self.field_getters = registry.field_getters
        self.update_strategy = StatusUpdate(registry.strategy)

    async def get(self, namespace: str | None, name: str) -> StoredObject:
        return await self.registry.get(namespace, name)

    async def update(
        self, namespace: str | None, name: str, body: dict[str, Any], opts: WriteOptions
    ) -> WriteResult:
        return await self.registry.update(namespace, name, body, opts, update=self.update_strategy)

    async def patch(
        self, namespace: str | None, name: str, patch: bytes, patch_type: str, opts: WriteOptions
    ) -> WriteResult:
        return await self.registry.patch(
            namespace, name, patch, patch_type, opts, update=self.update_strategy
        )

    async def apply(
        self, namespace: str | None, name: str, config: dict[str, Any], opts: WriteOptions
    ) -> WriteResult:
        return await self.registry.apply(namespace, name, config, opts, update=self.update_strategy)

"""A subresource that acts on its parent: ``POST <resource>/<name>/<subresource>``.

As Kubernetes' ``pods/binding``, the body is an object of its own kind (a ``Binding``), the
parent object is changed through its registry (a read, the change, a write that retries a
lost race, admission and validation as any update), and the answer is a ``Status`` with
201. Nothing else is served at that path. What the action does is the kind's (an
``Action``); how it is served is written once here.
"""

from __future__ import annotations

import copy
import typing
from dataclasses import dataclass
from typing import Any, Protocol

from ..api.field import FieldError
from ..api.meta import KindModel
from ..storage import StoredObject
from . import errors
from .decoding import FieldValidation, check_object
from .registry import Registry
from .rest import WriteOptions, WriteResult, unstored
from .strategy import Strategy


class Action(Protocol):
    """What one action subresource of a kind does."""

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


@dataclass
class _ActionUpdate:
    """The update an action makes: the object ``apply`` returned, validated as the kind's
    updates are."""

    strategy: Strategy[Any]
    subresource: str

    def carry_over(self, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        return new

    def validate_update(self, new: Any, old: Any) -> list[FieldError]:
        return self.strategy.validate_update(new, old)


class ActionSubresource:
    """``<resource>/<name>/<action>`` of a stored kind: create only."""

    def __init__(self, registry: Registry, action: Action) -> None:
        self.registry = registry
        self.action = action
        self.subresource = action.subresource
        self.strategy = registry.strategy
        self.resource = registry.resource
        self.field_getters = registry.field_getters
        self._update = _ActionUpdate(registry.strategy, action.subresource)

    async def create_named(
        self, namespace: str | None, name: str, body: dict[str, Any], opts: WriteOptions
    ) -> WriteResult:
        action = self.action
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if (api_version is not None and api_version != action.group_version) or (
            kind is not None and kind != action.kind
        ):
            raise errors.bad_request(
                f"the object sent is a {api_version}/{kind}, not a"
                f" {action.group_version}/{action.kind}"
            )
        meta = body.get("metadata") or {}
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if meta.get("name", name) != name:
            raise errors.bad_request("name in URL does not match name in the body")
        if self.resource.namespaced and meta.get("namespace", namespace) != namespace:
            raise errors.bad_request("namespace in URL does not match namespace in the body")
        model, unknown, errs = check_object(body, action.model)
        if unknown and opts.field_validation is FieldValidation.STRICT:
            fields = ", ".join(f'unknown field "{u}"' for u in unknown)
            raise errors.bad_request(f"{action.kind}: strict decoding error: {fields}")
        if not errs:
            errs = action.validate(typing.cast(KindModel, model))
        if errs:
            raise errors.invalid(action.kind, "", name, errs)

        def mutate(current: StoredObject) -> dict[str, Any]:
            return action.apply(copy.deepcopy(current.obj), model)

        await self.registry.write_through(namespace, name, mutate, opts, self._update)
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }
        warnings = (
            [f'unknown field "{u}"' for u in unknown]
            if opts.field_validation is FieldValidation.WARN
            else []
        )
        return WriteResult(unstored(status), 201, warnings)

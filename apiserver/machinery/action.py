"""A subresource that acts on its parent: ``POST <resource>/<name>/<subresource>``.

As Kubernetes' ``pods/binding``, the body is an object of its own kind (a ``Binding``), the
parent object is changed through its registry (a read, the change, a write that retries a
lost race, admission and validation as any update), and the answer is a ``Status`` with
201. Nothing else is served at that path. What the action does is the kind's (an
``Action``, declared with the strategy); how it is served is written once here: its body
is read by ``intake`` as every written body is, and the parent changes through the
registry's one update path (a ``Mutation``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..api.field import FieldError
from . import errors
from .intake import BodyType, check_names, check_type_meta, parse_written
from .registry import Registry
from .rest import WriteOptions, WriteResult, unstored
from .strategy import Action, Strategy
from .updates import Mutation


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
        self.body_type = BodyType(action.group_version, action.kind)
        self._update = _ActionUpdate(registry.strategy, action.subresource)

    async def create_named(
        self, namespace: str | None, name: str, body: dict[str, Any], opts: WriteOptions
    ) -> WriteResult:
        action = self.action
        check_type_meta(body, self.body_type)
        check_names(body, namespace, name, namespaced=self.resource.namespaced)
        model, warnings = parse_written(body, action.model, self.body_type, opts.field_validation)
        problems = action.validate(model)
        if problems:
            raise errors.invalid(action.kind, self.body_type.group, name, problems)
        mutation = Mutation(lambda parent: action.apply(parent, model))
        await self.registry.write(namespace, name, mutation, opts, self._update)
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }
        return WriteResult(unstored(status), 201, warnings)

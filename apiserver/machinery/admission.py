"""Admission: what may refuse a valid write just before it is stored, knowing who asks.

A chain of plugins is handed to the registries where the server is assembled (each mode
chooses its own); every create, update (of the object or of a subresource) and delete of a
stored kind passes through it with the whole user. A plugin refuses by raising a
``StatusError`` (e.g. 429 with Retry-After, or 404 for a namespace that does not exist);
it may also adjust the new object, as a mutating admission plugin does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .resource import ResourceType
from .user import UserInfo

CREATE, UPDATE, DELETE = "CREATE", "UPDATE", "DELETE"


@dataclass(frozen=True)
class AdmissionRequest:
    operation: str
    """``CREATE``, ``UPDATE`` or ``DELETE``."""
    resource: ResourceType
    subresource: str
    namespace: str | None
    name: str
    obj: dict[str, Any] | None
    """The object to be stored (None for a delete)."""
    old: dict[str, Any] | None
    """The stored object (None for a create)."""
    user: UserInfo
    dry_run: bool


class AdmissionPlugin(Protocol):
    async def admit(self, request: AdmissionRequest) -> None: ...


class AdmissionChain:
    def __init__(self, plugins: Sequence[AdmissionPlugin] = ()) -> None:
        self.plugins = list(plugins)

    async def admit(self, request: AdmissionRequest) -> None:
        for plugin in self.plugins:
            await plugin.admit(request)

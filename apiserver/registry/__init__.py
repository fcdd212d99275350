"""One strategy per served kind. Adding a kind: a types module, a validation module, a strategy here."""

from __future__ import annotations

from ..machinery.strategy import Strategy
from .resourcepoolstatusrequest import ResourcePoolStatusRequestStrategy
from .resourceslicepatch import ResourceSlicePatchStrategy

DEFAULT_GROUP = "resource.k8s.io"


def strategies(group: str = DEFAULT_GROUP) -> list[Strategy]:  # type: ignore[type-arg]
    """Every kind this server serves, in ``group``."""
    return [
        ResourceSlicePatchStrategy.for_group(group),
        ResourcePoolStatusRequestStrategy.for_group(group),
    ]

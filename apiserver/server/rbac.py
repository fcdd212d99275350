"""RBAC in standalone mode: the roles and bindings in the store feed the authorizer's index.

``RBACPolicy`` is made first, because the cluster needs its authorizer and its escalation
admission. ``RBACService`` then feeds the ``RBACIndex`` from one source per RBAC kind; at
start it creates (or reconciles) the bootstrap policy through the cluster's registries and
waits for the sources to sync before the server takes requests, so the first request is
decided on the whole policy. The aggregation controller keeps aggregated ClusterRoles'
stored rules current. Readiness: ``informer-<kind>`` per source and ``rbac-bootstrap``.
"""

from __future__ import annotations

from typing import Any

from ..auth.rbac import RBACAuthorizer, RBACIndex
from ..auth.rbac.bootstrap import policy
from ..auth.rbac.escalation import EscalationGuard
from ..controllers import ClusterRoleAggregationController, ensure_policy
from ..kinds.rbac import (
    ClusterRoleBindingStrategy,
    ClusterRoleStrategy,
    RoleBindingStrategy,
    RoleStrategy,
)
from ..machinery import Strategy
from ..sources import SourceEvent, StoreSource
from ..storage import EventType
from .cluster import Cluster


class RBACPolicy:
    """The index, the authorizer deciding on it, and the escalation admission."""

    def __init__(self) -> None:
        self.index = RBACIndex()
        self.authorizer = RBACAuthorizer(self.index)
        self.escalation = EscalationGuard(self.authorizer)


class RBACService:
    def __init__(
        self, cluster: Cluster, rbac: RBACPolicy, group: str, *, bootstrap: bool = True
    ) -> None:
        self.index = rbac.index
        self.authorizer = rbac.authorizer
        self.group = group
        self.bootstrap = bootstrap
        self.bootstrapped = False
        strategies: list[Strategy[Any]] = [
            RoleStrategy.upstream(),
            ClusterRoleStrategy.upstream(),
            RoleBindingStrategy.upstream(),
            ClusterRoleBindingStrategy.upstream(),
        ]
        self.registries = {s.kind: cluster.registry(s.resource) for s in strategies}
        self.sources = {
            s.kind: StoreSource(cluster.store, s.resource.key_prefix(), name=s.plural)
            for s in strategies
        }
        for source in self.sources.values():
            source.add_handler(self._feed)
        self.aggregation = ClusterRoleAggregationController(
            self.sources["ClusterRole"], self.index, self.registries["ClusterRole"]
        )

    def _feed(self, event: SourceEvent) -> None:
        if event.type is EventType.DELETED:
            self.index.delete(event.obj)
        else:
            self.index.upsert(event.obj)

    async def start(self) -> None:
        if self.bootstrap:
            await ensure_policy(policy(self.group), self.registries)
        self.bootstrapped = True
        for source in self.sources.values():
            await source.start()
        for source in self.sources.values():
            await source.wait_synced()
        await self.aggregation.start()

    async def close(self) -> None:
        await self.aggregation.close()
        for source in self.sources.values():
            await source.close()

    def readiness(self) -> dict[str, bool]:
        checks = {f"informer-{s.name}": s.has_synced for s in self.sources.values()}
        checks["rbac-bootstrap"] = self.bootstrapped
        return checks

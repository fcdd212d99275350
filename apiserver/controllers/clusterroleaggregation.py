"""Writes each aggregated ClusterRole's rules into the stored object, as Kubernetes'
clusterrole aggregation controller does, so ``kubectl get clusterrole admin -o yaml`` shows
them. The rules come from the RBAC index (which the authorizer already decides on); the
controller only makes the stored objects say the same. It runs after every ClusterRole
change, and a write that loses a race is simply redone on the next change.
"""

from __future__ import annotations

import logging

import orjson

from ..auth.rbac import RBACIndex, Rule
from ..machinery import Registry, WriteOptions, errors
from ..sources import Source
from ..toolkit import MERGE_PATCH
from .sweeping import SweepingController

log = logging.getLogger("apiserver.controllers.clusterroleaggregation")
MANAGER = "clusterrole-aggregation-controller"


class ClusterRoleAggregationController(SweepingController):
    def __init__(self, roles: Source, index: RBACIndex, registry: Registry) -> None:
        super().__init__(roles, "clusterrole aggregation", log)
        self.roles = roles
        self.index = index
        self.registry = registry
        self.writes = 0

    async def _sweep(self) -> None:
        await self.sync()

    async def sync(self) -> list[str]:
        """Write the rules of every aggregated role whose stored rules differ; the names written."""
        written = []
        for name in self.index.aggregated_cluster_roles():
            stored = self.roles.get(name)
            rules = self.index.cluster_role_rules(name)
            if stored is None or rules is None:
                continue
            want = [rule.to_json() for rule in rules]
            have = [Rule.from_json(r).to_json() for r in stored.get("rules") or []]
            if have == want:
                continue
            try:
                await self.registry.patch(
                    None,
                    name,
                    orjson.dumps({"rules": want}),
                    MERGE_PATCH,
                    WriteOptions(field_manager=MANAGER),
                )
            except errors.StatusError as err:
                if err.code in (404, 409):
                    continue  # gone, or changed meanwhile: the next event brings it back here
                raise
            written.append(name)
            self.writes += 1
        return written

"""Aggregated mode's cluster: the kube-apiserver proxies our group-versions to us, and the
objects our kinds compute over are the cluster's own.

Slices, classes, claims and nodes are read by list+watch from the kube-apiserver
(``KubeSource``, raw JSON), and DeviceTaintRules where the cluster serves them; our kinds (patches, pool status requests) live in our store and
are the only stored kinds served; Events are written to the kube-apiserver. Readiness
includes every upstream source, so ``/readyz`` is 200 only once they have synced.
"""

from __future__ import annotations

from typing import Any

from ..auth import Authenticator, Authorizer
from ..controllers import EventRecorder
from ..kinds import own_strategies
from ..kinds.deviceclass import DeviceClassStrategy
from ..kinds.devicetaintrule import DeviceTaintRuleStrategy
from ..kinds.node import NodeStrategy
from ..kinds.resourceclaim import ResourceClaimStrategy
from ..kinds.resourcepoolstatusrequest import ResourcePoolStatusRequestStrategy
from ..kinds.resourceslice import ResourceSliceStrategy
from ..kinds.resourceslicepatch import ResourceSlicePatchStrategy
from ..kubeclient import ClientEventRecorder, KubeClient
from ..machinery import AdmissionPlugin, Registry, Resource, ResourceType, Strategy
from ..sources import KubeSource, Source
from ..storage import Store
from ..toolkit import Backoff
from .cluster import (
    COMPONENT,
    ClusterSources,
    RateLimit,
    admission_chain,
    serve_kinds,
    store_source,
)

UPSTREAM = {
    "slices": ResourceSliceStrategy.upstream().resource,
    "classes": DeviceClassStrategy.upstream().resource,
    "claims": ResourceClaimStrategy.upstream().resource,
    "nodes": NodeStrategy.core().resource,
}
"""The kinds read from the kube-apiserver, by the field of ``ClusterSources`` they feed."""


def collection_path(resource: ResourceType) -> str:
    """Where the kube-apiserver serves the collection: ``/api/v1/nodes``,
    ``/apis/resource.k8s.io/v1/resourceslices``."""
    root = f"/apis/{resource.group}" if resource.group else "/api"
    return f"{root}/{resource.version}/{resource.plural}"


class AggregatedCluster:
    def __init__(
        self,
        store: Store,
        group: str,
        client: KubeClient,
        *,
        authenticator: Authenticator | None,
        authorizer: Authorizer | None,
        pool_status_create_limit: RateLimit | None = None,
        admission: list[AdmissionPlugin] | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.store = store
        self.group = group
        self.client = client
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.admission = admission_chain(group, pool_status_create_limit, admission)
        self._served = serve_kinds(self.kinds(group), store, admission=self.admission)
        self._registries = {r.resource: r for r in self._served if isinstance(r, Registry)}
        upstream = {
            field: KubeSource(
                client, collection_path(resource), name=resource.plural, backoff=backoff
            )
            for field, resource in UPSTREAM.items()
        }
        rules = DeviceTaintRuleStrategy.upstream().resource
        taint_rules = KubeSource(
            client,
            collection_path(rules),
            name=rules.plural,
            backoff=backoff,
            optional=True,  # served only where the cluster has DeviceTaintRules at v1
        )
        self.upstream = [*upstream.values(), taint_rules]
        self.sources = ClusterSources(
            **upstream,
            taint_rules=taint_rules,
            patches=store_source(store, ResourceSlicePatchStrategy.for_group(group).resource),
            requests=store_source(
                store, ResourcePoolStatusRequestStrategy.for_group(group).resource
            ),
        )
        self.events: EventRecorder = ClientEventRecorder(client, COMPONENT)

    @staticmethod
    def kinds(group: str) -> list[Strategy[Any]]:
        """Only our kinds: the kube-apiserver serves the upstream ones."""
        return own_strategies(group)

    def served(self) -> list[Resource]:
        return list(self._served)

    def registry(self, resource: ResourceType) -> Registry:
        return self._registries[resource]

    async def start(self) -> None:
        await self.sources.start()

    async def close(self) -> None:
        await self.sources.close()
        await self.client.aclose()

    def own_sources(self) -> list[Source]:
        # The upstream kinds follow the kube-apiserver's revisions, not our store's.
        return [self.sources.patches, self.sources.requests]

    def readiness(self) -> dict[str, bool]:
        return self.sources.readiness()

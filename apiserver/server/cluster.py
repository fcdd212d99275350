"""The per-mode seam: what one way of running the server supplies to everything above it.

A ``Cluster`` says where the objects the server computes over come from (sources of
slices, classes, claims, nodes and of our own kinds), where Events go, who is asking (the
authenticator chain), what they may do (the authorizer) and which admission plugins run.
It also builds, once, the registry of every kind it stores, so the server's routes, the
services and the controllers write through the same objects. Standalone mode serves the
upstream kinds from its own store (``StandaloneCluster``); aggregated mode reads them from
a kube-apiserver.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..auth import Authenticator, Authorizer
from ..controllers import EventRecorder, RegistryEventRecorder
from ..kinds import own_strategies, standalone_strategies
from ..kinds.adminaccess import AdminAccessAdmission
from ..kinds.admission import CreateRateLimit, UserRateLimiter
from ..kinds.deviceclass import DeviceClassStrategy
from ..kinds.devicetaintrule import DeviceTaintRuleStrategy
from ..kinds.event import EventStrategy
from ..kinds.namespace import NamespaceStrategy
from ..kinds.namespacelifecycle import NamespaceLifecycle
from ..kinds.node import NodeStrategy
from ..kinds.resourceclaim import ResourceClaimStrategy
from ..kinds.resourcepoolstatusrequest import ResourcePoolStatusRequestStrategy
from ..kinds.resourceslice import ResourceSliceStrategy
from ..kinds.resourceslicepatch import ResourceSlicePatchStrategy
from ..machinery import (
    ActionSubresource,
    AdmissionChain,
    AdmissionPlugin,
    ComputedResource,
    ConvertingStore,
    Registry,
    Resource,
    ResourceType,
    ReviewResource,
    ReviewStrategy,
    StatusSubresource,
    Strategy,
)
from ..sources import Source, StoreSource
from ..storage import ReadableStore, Store

COMPONENT = "dra-apiserver"


@dataclass(frozen=True)
class ClusterSources:
    """The list+watch mirrors everything above the sources reads, one per kind."""

    slices: Source
    classes: Source
    claims: Source
    nodes: Source
    patches: Source
    requests: Source
    taint_rules: Source | None = None
    """DeviceTaintRules, where the mode has them."""

    def all(self) -> list[Source]:
        rules = [self.taint_rules] if self.taint_rules is not None else []
        return [
            self.slices,
            self.classes,
            self.claims,
            self.nodes,
            self.patches,
            self.requests,
            *rules,
        ]

    async def start(self) -> None:
        for source in self.all():
            await source.start()

    async def close(self) -> None:
        """In the reverse order of ``start``."""
        for source in reversed(self.all()):
            await source.close()

    def readiness(self) -> dict[str, bool]:
        """Whether each source has synced, by its name."""
        return {f"informer-{s.name}": s.has_synced for s in self.all()}


def store_source(store: Store, resource: ResourceType) -> StoreSource:
    """A source of the objects of ``resource`` kept in ``store``."""
    return StoreSource(store, resource.key_prefix(), name=resource.plural)


class Cluster(Protocol):
    store: Store
    """Where our own kinds live."""
    sources: ClusterSources
    events: EventRecorder
    authenticator: Authenticator | None
    authorizer: Authorizer | None
    admission: AdmissionChain

    def served(self) -> list[Resource]:
        """What this mode serves from its store (and the review kinds it answers), every
        resource and subresource."""
        ...

    def registry(self, resource: ResourceType) -> Registry:
        """The one registry of a stored kind."""
        ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def readiness(self) -> dict[str, bool]: ...

    def own_sources(self) -> list[Source]:
        """The sources that follow this mode's own store (their revisions are the store's):
        what a consistent read waits for."""
        ...


@dataclass
class RateLimit:
    rate: float = 0.2
    burst: int = 10


def serve_kinds(
    strategies: Iterable[Strategy[Any]],
    store: Store,
    *,
    admission: AdmissionChain | None = None,
    computed: Mapping[ResourceType, ReadableStore] | None = None,
) -> list[Resource]:
    """What serves each kind, by its capabilities: a review kind creates only, a kind in
    ``computed`` reads its own store, any other is stored in ``store`` (with its status
    subresource if it has a status); a version served beside the storage version reads and
    writes ``store`` through its conversion."""
    served: list[Resource] = []
    for strategy in strategies:
        if isinstance(strategy, ReviewStrategy):
            served.append(ReviewResource(strategy))
        elif computed is not None and strategy.resource in computed:
            served.append(ComputedResource(strategy, computed[strategy.resource]))
        else:
            conversion = strategy.conversion
            through: Store = (
                ConvertingStore(store, strategy.resource, conversion)
                if conversion is not None
                else store
            )
            registry = Registry(strategy, through, admission)
            served.append(registry)
            if strategy.has_status:
                served.append(StatusSubresource(registry))
            served.extend(ActionSubresource(registry, action) for action in strategy.actions)
    return served


def admission_chain(
    group: str, limit: RateLimit | None, plugins: list[AdmissionPlugin] | None
) -> AdmissionChain:
    """The given plugins, then the per-user creation limit of pool status requests."""
    chain: list[AdmissionPlugin] = list(plugins or [])
    requests = ResourcePoolStatusRequestStrategy.for_group(group).resource
    limit = limit or RateLimit()
    if limit.rate > 0:
        limiter = UserRateLimiter(
            limit.rate,
            limit.burst,
            what=requests.plural,
            flags=("--pool-status-create-rate", "--pool-status-create-burst"),
        )
        chain.append(CreateRateLimit(requests, limiter))
    return AdmissionChain(chain)


class StandaloneCluster:
    """Everything from one store: our kinds and the upstream kinds a cluster would serve."""

    def __init__(
        self,
        store: Store,
        group: str,
        *,
        authenticator: Authenticator | None,
        authorizer: Authorizer | None,
        pool_status_create_limit: RateLimit | None = None,
        admission: list[AdmissionPlugin] | None = None,
        reviews: Iterable[ReviewStrategy[Any]] = (),
    ) -> None:
        """``reviews``: the review kinds this mode answers (they need its authenticator and
        authorizer, so they are made with them)."""
        self.store = store
        self.group = group
        self.authenticator = authenticator
        self.authorizer = authorizer
        lifecycle = NamespaceLifecycle()
        admin_access = AdminAccessAdmission()
        self.admission = admission_chain(
            group, pool_status_create_limit, [lifecycle, admin_access, *(admission or [])]
        )
        self._served = serve_kinds([*self.kinds(group), *reviews], store, admission=self.admission)
        self._registries = {r.resource: r for r in self._served if isinstance(r, Registry)}
        namespaces = self.registry(NamespaceStrategy.core().resource)
        lifecycle.bind(namespaces)
        admin_access.bind(namespaces)
        self.sources = ClusterSources(
            slices=store_source(store, ResourceSliceStrategy.upstream().resource),
            classes=store_source(store, DeviceClassStrategy.upstream().resource),
            claims=store_source(store, ResourceClaimStrategy.upstream().resource),
            nodes=store_source(store, NodeStrategy.core().resource),
            patches=store_source(store, ResourceSlicePatchStrategy.for_group(group).resource),
            requests=store_source(
                store, ResourcePoolStatusRequestStrategy.for_group(group).resource
            ),
            taint_rules=store_source(store, DeviceTaintRuleStrategy.upstream().resource),
        )
        self.events: EventRecorder = RegistryEventRecorder(
            self.registry(EventStrategy.core().resource), COMPONENT
        )

    @staticmethod
    def kinds(group: str) -> list[Strategy[Any]]:
        """Our kinds and the upstream ones, all in the one store."""
        return [*own_strategies(group), *standalone_strategies()]

    def served(self) -> list[Resource]:
        return list(self._served)

    def registry(self, resource: ResourceType) -> Registry:
        return self._registries[resource]

    def registries(self) -> list[Registry]:
        """The registry of every stored kind."""
        return list(self._registries.values())

    async def start(self) -> None:
        await self.sources.start()

    async def close(self) -> None:
        await self.sources.close()

    def own_sources(self) -> list[Source]:
        return self.sources.all()

    def readiness(self) -> dict[str, bool]:
        return self.sources.readiness()

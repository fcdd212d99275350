"""The parts of a running server, assembled from its options over a cluster: the services
in the order they start (and the reverse in which they stop), the resources they serve, and
the answer of AllocationReviews.

Start order matters: what authorizes requests first, then the cluster's sources, the
controllers standalone runs itself, the device view, reservations, the pool index (pool
status's or a plain one: the allocator reads the same pools either way), the live pool view
and the pool metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

from prometheus_client import CollectorRegistry, GCCollector

from ..auth import Authorizer
from ..controllers.namespacedeletion import NamespaceDeleter
from ..controllers.resourceclaims import ResourceClaimController
from ..kinds import SystemNamespaces
from ..kinds.allocationreview import AllocationReviewStrategy
from ..kinds.devicereservation import DeviceReservationStrategy
from ..kinds.namespace import NamespaceStrategy
from ..kinds.pod import PodStrategy
from ..kinds.resourceclaim import ResourceClaimStrategy
from ..kinds.resourceclaimtemplate import ResourceClaimTemplateStrategy
from ..pools import PoolIndex
from ..reservations import ReservationService
from ..sources import StoreSource
from ..storage import Store
from .allocation import AllocationService, PoolIndexService
from .app import APIServer, Service
from .cluster import Cluster, StandaloneCluster
from .deviceview import DeviceViewOptions, DeviceViewService
from .options import ServeOptions
from .poolmetrics import PoolMetrics, review_histogram, timed
from .poolstatus import PoolStatusService
from .poolview import PoolViewOptions, PoolViewService
from .reviewaccess import authorized_reviews

_Windowed = TypeVar("_Windowed", DeviceViewOptions, PoolViewOptions)


def assemble(
    options: ServeOptions,
    cluster: Cluster,
    store: Store,
    authorizer: Authorizer,
    first: Sequence[Service] = (),
) -> APIServer:
    """The server over ``cluster`` and its ``store``; ``first``: the services that start
    before the cluster's (the RBAC policy, the delegated authentication's clients)."""
    group = options.cluster.group
    metrics = CollectorRegistry()
    GCCollector(registry=metrics)  # python_gc_*: the collector's work (--gc-young-threshold)
    devices = DeviceViewService(cluster, group, _windowed(options, options.device_view))
    reservations = ReservationService(
        cluster.registry(DeviceReservationStrategy.for_group(group).resource),
        cluster.sources.claims,
        max_per_user=options.allocation.max_reservations_per_user,
    )
    services: list[Service] = [*first, cluster]
    if isinstance(cluster, StandaloneCluster):
        services += standalone_controllers(cluster)
    services += [devices, reservations]
    pools, pool_service = _pool_index(options, cluster, devices, reservations, metrics)
    pool_view = PoolViewService(pools, group, _windowed(options, options.pools))
    services += [
        pool_service,
        pool_view,
        PoolMetrics(pools, reservations.held, metrics, max_pools=options.pools.metrics_max_pools),
    ]
    allocation = AllocationService(cluster, pools, reservations, store)
    _answer_reviews(cluster, allocation, authorizer, group, metrics)
    return APIServer(
        store,
        [*cluster.served(), *devices.served(), *pool_view.served()],
        options.settings,
        services=services,
        metrics=metrics,
    )


def _windowed(options: ServeOptions, view: _Windowed) -> _Windowed:
    """A computed kind's options with the event window of ``--watch-history`` and
    ``--watch-history-mib``, as every kind's watch cache has."""
    storage = options.storage
    return replace(view, window=storage.watch_history, window_bytes=storage.window_bytes)


def _pool_index(
    options: ServeOptions,
    cluster: Cluster,
    devices: DeviceViewService,
    reservations: ReservationService,
    metrics: CollectorRegistry,
) -> tuple[PoolIndex, Service]:
    """Pool status's index and the service that runs it; with ``--no-pool-status`` a plain
    index, so the allocator reads the same pools either way."""
    group = options.cluster.group
    if options.pool_status.enabled:
        pool_status = PoolStatusService(
            cluster, group, devices, options.pool_status, metrics, reservations.devices
        )
        return pool_status.index, pool_status
    pools = PoolIndex(
        devices.view,
        cluster.sources.slices,
        cluster.sources.claims,
        reservations=reservations.devices,
    )
    return pools, PoolIndexService(pools)


def _answer_reviews(
    cluster: Cluster,
    allocation: AllocationService,
    authorizer: Authorizer,
    group: str,
    metrics: CollectorRegistry,
) -> None:
    """AllocationReviews answered by the allocation service, timed; who asks may read each
    claim named, and reserve only with the verb for it."""
    latency = review_histogram(metrics)
    for resource in cluster.served():
        if isinstance(resource.strategy, AllocationReviewStrategy):
            resource.strategy.answer_with(
                timed(latency, authorized_reviews(allocation.review, authorizer, group))
            )


def resource_claim_controller(cluster: StandaloneCluster) -> ResourceClaimController:
    """Claims from pods' templates, and consumers that are gone pruned (standalone only:
    in a cluster, kube-controller-manager does it)."""
    pods = cluster.registry(PodStrategy.core().resource)
    return ResourceClaimController(
        StoreSource(cluster.store, pods.resource.key_prefix(), name="pods"),
        cluster.sources.claims,
        pods,
        cluster.registry(ResourceClaimStrategy.upstream().resource),
        cluster.registry(ResourceClaimTemplateStrategy.upstream().resource),
    )


def standalone_controllers(cluster: StandaloneCluster) -> list[Service]:
    """What kube-apiserver and kube-controller-manager do in a cluster: the system
    namespaces, namespace deletion, claims from templates."""
    namespaces = cluster.registry(NamespaceStrategy.core().resource)
    return [
        SystemNamespaces(cluster.store),
        NamespaceDeleter(
            StoreSource(cluster.store, namespaces.resource.key_prefix(), name="namespaces"),
            namespaces,
            cluster.registries(),
        ),
        resource_claim_controller(cluster),
    ]

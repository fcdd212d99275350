"""Which ``Cluster`` a mode runs with: ``standalone`` serves every kind from one store;
``aggregated`` reads the cluster's kinds from a kube-apiserver, after checking that it does
not already serve a group-version of ours."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..api.resource import DRA_GROUP
from ..auth import Authenticator, Authorizer
from ..kinds import strategies
from ..kubeclient import APIError, KubeClient, config_for
from ..machinery import AdmissionPlugin, ReviewStrategy, Strategy
from ..storage import Store
from ..toolkit.options import option
from .aggregated import AggregatedCluster
from .cluster import Cluster, RateLimit, StandaloneCluster
from .servedcheck import check_served_versions

MODES = ("standalone", "aggregated")
UPSTREAM_HINT = "aggregated mode reads from a kube-apiserver: pass --kubeconfig, or run in a Pod"


def upstream_client(kubeconfig: str | None) -> KubeClient:
    """The client of the kube-apiserver aggregated mode reads from: ``kubeconfig``'s, else
    the in-cluster one (``KubeconfigError`` naming the flag when there is neither)."""
    return KubeClient(config_for(kubeconfig, hint=UPSTREAM_HINT))


@dataclass
class ClusterOptions:
    """Where the cluster's objects come from, and the group our kinds are served in."""

    mode: str = option(
        "--mode",
        "standalone",
        "standalone: serve every kind from our store; aggregated: behind a kube-apiserver,"
        " reading slices, claims, classes and nodes from it",
        choices=MODES,
    )
    kubeconfig: str | None = option(
        "--kubeconfig",
        None,
        "aggregated mode: kubeconfig of the kube-apiserver (default: in-cluster configuration)",
    )
    group: str = option("--group", DRA_GROUP, "API group to serve")

    @property
    def standalone(self) -> bool:
        return self.mode == "standalone"


def stored_kinds(mode: str, group: str) -> list[Strategy[Any]]:
    """The kinds the mode keeps in its own store."""
    if mode == "aggregated":
        return AggregatedCluster.kinds(group)
    return StandaloneCluster.kinds(group)


def served_group_versions(group: str) -> list[str]:
    """Our group-versions, the ones the APIServices route to us."""
    return sorted({s.resource.group_version for s in strategies(group, standalone=False)})


async def _check_upstream(kubeconfig: str | None, group: str) -> None:
    async with upstream_client(kubeconfig) as client:
        await check_served_versions(client, group, served_group_versions(group))


def check_upstream(kubeconfig: str | None, group: str) -> None:
    """Before serving: the kube-apiserver answers, and serves none of our group-versions
    itself. Raises ``ValueError`` with the reason otherwise."""
    try:
        asyncio.run(_check_upstream(kubeconfig, group))
    except (OSError, TimeoutError, APIError) as exc:
        raise ValueError(f"cannot reach the kube-apiserver: {exc}") from exc


def build_cluster(
    options: ClusterOptions,
    store: Store,
    *,
    authenticator: Authenticator | None,
    authorizer: Authorizer | None,
    pool_status_create_limit: RateLimit | None = None,
    admission: list[AdmissionPlugin] | None = None,
    reviews: Iterable[ReviewStrategy[Any]] = (),
) -> Cluster:
    """``reviews``: the review kinds standalone answers itself (in a cluster the
    kube-apiserver serves them)."""
    if options.mode == "aggregated":
        return AggregatedCluster(
            store,
            options.group,
            upstream_client(options.kubeconfig),
            authenticator=authenticator,
            authorizer=authorizer,
            pool_status_create_limit=pool_status_create_limit,
            admission=admission,
        )
    if options.mode == "standalone":
        return StandaloneCluster(
            store,
            options.group,
            authenticator=authenticator,
            authorizer=authorizer,
            pool_status_create_limit=pool_status_create_limit,
            admission=admission,
            reviews=reviews,
        )
    raise ValueError(f"unknown --mode {options.mode!r}; expected one of {', '.join(MODES)}")

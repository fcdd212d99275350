"""Run the server: storage from a URL, TLS material, kubeconfig, uvicorn."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

import uvicorn
from prometheus_client import CollectorRegistry

from ..api.resource import DRA_GROUP
from ..auth import (
    MASTERS,
    AllowAuthenticated,
    Authorizer,
    TokenAuthenticator,
    admin_token,
    generate_token_file,
    read_token_file,
)
from ..auth.delegation import AuthOptions, auth_for_mode
from ..auth.reviewkinds import review_strategies
from ..auth.reviews import EveryRule, RuleResolver
from ..controllers.namespacedeletion import NamespaceDeleter
from ..controllers.resourceclaims import ResourceClaimController
from ..kinds import SystemNamespaces
from ..kinds.allocationreview import AllocationReviewStrategy
from ..kinds.devicereservation import DeviceReservationStrategy
from ..kinds.namespace import NamespaceStrategy
from ..kinds.pod import PodStrategy
from ..kinds.resourceclaim import ResourceClaimStrategy
from ..kinds.resourceclaimtemplate import ResourceClaimTemplateStrategy
from ..kubeclient import load_kubeconfig
from ..machinery.review import ReviewStrategy
from ..pools import PoolIndex
from ..reservations import MAX_PER_USER as MAX_RESERVATIONS_PER_USER
from ..reservations import ReservationService
from ..sources import StoreSource
from ..storage import Store
from ..storage.cacher import WatchCache
from ..storage.etcd import EtcdConfig, EtcdStore
from ..storage.fanout import STALL_TIMEOUT
from ..storage.sqlite import SQLiteStore
from .accesslog import enable_access_log
from .allocation import AllocationService, PoolIndexService
from .app import APIServer, ServerSettings, Service, build_app
from .certs import ServingFiles, ensure_serving_certs
from .cluster import RateLimit, StandaloneCluster
from .deviceview import DeviceViewOptions, DeviceViewService
from .kubeconfig import write_kubeconfig
from .modes import build_cluster, check_upstream, stored_kinds
from .poolmetrics import MAX_POOLS_DEFAULT, PoolMetrics, review_histogram, timed
from .poolstatus import PoolStatusOptions, PoolStatusService
from .poolview import PoolViewOptions, PoolViewService
from .protocol import (
    READ_HEADER_TIMEOUT,
    READ_TIMEOUT,
    WRITE_STALL_TIMEOUT,
    BoundedHttpToolsProtocol,
)
from .rbac import RBACPolicy, RBACService
from .reviewaccess import authorized_reviews
from .startup import AnnouncingServer, announcement, bind
from .tlspeer import ssl_context_factory, with_peer_certificates
from .tlspolicy import with_policy

log = logging.getLogger("apiserver")
MIB = 1024 * 1024


@dataclass
class ServeOptions:
    bind_address: str = "127.0.0.1"
    secure_port: int = 6443
    storage: str = "sqlite:///data/apiserver.db"
    cert_dir: str = "certs"
    kubeconfig_out: str | None = None
    mode: str = "standalone"
    kubeconfig: str | None = None
    """Aggregated mode: the kube-apiserver's kubeconfig (else the in-cluster configuration)."""
    group: str = DRA_GROUP
    token_auth_file: str | None = None
    authorization_mode: str = "RBAC"
    watch_history: int = 10_000
    watch_history_mib: int = 64
    watch_cache: bool = True
    patch_status: bool = True
    patch_status_interval: float = 1.0
    pool_status: bool = True
    pool_status_ttl: float = 3600.0
    pool_status_pending_ttl: float = 24 * 3600.0
    pool_status_create_rate: float = 0.2
    pool_status_create_burst: int = 10
    metrics_max_pools: int = MAX_POOLS_DEFAULT
    """Pools exported one by one on /metrics; beyond it per-driver totals only."""
    max_reservations_per_user: int = MAX_RESERVATIONS_PER_USER
    etcd_prefix: str = "/registry"
    etcd_cafile: str | None = None
    etcd_certfile: str | None = None
    etcd_keyfile: str | None = None
    etcd_request_timeout: float = 5.0
    etcd_compaction_interval: float = 300.0
    tls_san: list[str] = field(default_factory=list)
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    log_level: str = "info"
    access_log: bool = False
    read_header_timeout: float = READ_HEADER_TIMEOUT
    read_timeout: float = READ_TIMEOUT
    write_stall_timeout: float = WRITE_STALL_TIMEOUT
    watch_stall_timeout: float = STALL_TIMEOUT
    settings: ServerSettings = field(default_factory=ServerSettings)
    auth: AuthOptions = field(default_factory=AuthOptions)


def open_store(url: str, *, history: int, options: ServeOptions | None = None) -> Store:
    """A Store for ``sqlite:///relative/path``, ``sqlite:////absolute/path``,
    ``sqlite://:memory:`` or ``etcd://HOST:PORT[,HOST:PORT...]`` (``etcds://`` with TLS)."""
    options = options or ServeOptions()
    if url.startswith("sqlite://"):
        path = url[len("sqlite://") :]
        if path.startswith("/"):
            path = path[1:]
        if not path:
            raise ValueError("sqlite storage needs a path, e.g. sqlite:///data/apiserver.db")
        return SQLiteStore(path, history=history)
    if url.startswith(("etcd://", "etcds://")):
        config = EtcdConfig.from_url(
            url,
            prefix=options.etcd_prefix,
            ca_file=options.etcd_cafile,
            cert_file=options.etcd_certfile,
            key_file=options.etcd_keyfile,
            request_timeout=options.etcd_request_timeout,
            compaction_interval=options.etcd_compaction_interval,
        )
        return EtcdStore(config)
    raise ValueError(
        f"unsupported storage URL {url!r}; expected sqlite:///PATH or etcd://HOST:PORT[,HOST:PORT]"
    )


def _upstream_token(options: ServeOptions) -> str | None:
    """Aggregated mode: the bearer token of ``--kubeconfig``, which the kube-apiserver reviews
    for us too, for a kubeconfig that talks to this server directly (tests, debugging)."""
    if not options.kubeconfig:
        return None
    return load_kubeconfig(options.kubeconfig).token


def _server_url(bind_address: str, port: int) -> str:
    host = "127.0.0.1" if bind_address in ("0.0.0.0", "", "::") else bind_address
    if ":" in host:
        host = f"[{host}]"
    return f"https://{host}:{port}"


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


def prepare(options: ServeOptions) -> tuple[uvicorn.Config, APIServer]:
    if options.mode == "aggregated":
        check_upstream(options.kubeconfig, options.group)
    if options.tls_cert_file and options.tls_private_key_file:
        # A certificate made for the Service (python -m apiserver install-certs), mounted from a Secret.
        files = ServingFiles(
            Path(options.tls_cert_file),
            Path(options.tls_cert_file),
            Path(options.tls_private_key_file),
        )
    elif options.tls_cert_file or options.tls_private_key_file:
        raise ValueError("--tls-cert-file and --tls-private-key-file go together")
    else:
        files = ensure_serving_certs(options.cert_dir, [options.bind_address, *options.tls_san])
    # Aggregated mode checks bearer tokens with the kube-apiserver (TokenReview), not a file.
    standalone = options.mode == "standalone"
    token_file = Path(options.token_auth_file or Path(options.cert_dir) / "tokens.csv")
    if standalone and not token_file.exists():
        generate_token_file(token_file)
    tokens = read_token_file(token_file) if standalone else []
    if not standalone and options.kubeconfig:
        # The kube-apiserver the data comes from also reviews tokens and access, unless
        # the delegation flags name another.
        options.auth = replace(
            options.auth,
            authentication_kubeconfig=options.auth.authentication_kubeconfig or options.kubeconfig,
            authorization_kubeconfig=options.auth.authorization_kubeconfig or options.kubeconfig,
        )
    auth = auth_for_mode(
        options.mode, options.auth, TokenAuthenticator(dict(tokens)) if standalone else None
    )
    if options.kubeconfig_out:
        token = admin_token(tokens) if standalone else _upstream_token(options)
        if token is None and standalone:
            raise ValueError(f"{token_file} has no token of a user in {MASTERS} for the kubeconfig")
        if token is None:
            log.warning(
                "--kubeconfig-out: not written: aggregated mode has no local tokens and the"
                " --kubeconfig has no bearer token to reuse"
            )
    if options.kubeconfig_out and token is not None:
        write_kubeconfig(
            options.kubeconfig_out,
            _server_url(options.bind_address, options.secure_port),
            files.ca_cert,
            token,
        )
    store = open_store(options.storage, history=options.watch_history, options=options)
    if options.watch_cache:
        store = WatchCache(
            store,
            prefixes=[
                s.resource.key_prefix()
                for s in stored_kinds(options.mode, options.group)
                if not isinstance(s, ReviewStrategy)
            ],
            window=options.watch_history,
            window_bytes=options.watch_history_mib * MIB,
            stall_timeout=options.watch_stall_timeout,
        )
    if options.authorization_mode not in ("RBAC", "AlwaysAllow"):
        raise ValueError(
            f"--authorization-mode must be RBAC or AlwaysAllow, not {options.authorization_mode!r}"
        )
    # Standalone decides with its own RBAC; aggregated mode asks the kube-apiserver.
    policy = RBACPolicy() if standalone and options.authorization_mode == "RBAC" else None
    authorizer: Authorizer = (
        auth.authorizer
        if auth.authorizer is not None
        else policy.authorizer
        if policy is not None
        else AllowAuthenticated()
    )
    resolver: RuleResolver = policy.authorizer if policy is not None else EveryRule()
    authenticator = auth.authenticator
    cluster = build_cluster(
        options.mode,
        store,
        options.group,
        kubeconfig=options.kubeconfig,
        authenticator=authenticator,
        authorizer=authorizer,
        pool_status_create_limit=RateLimit(
            options.pool_status_create_rate, options.pool_status_create_burst
        ),
        admission=[policy.escalation] if policy is not None else [],
        reviews=review_strategies(authenticator, authorizer, resolver),
    )
    # First among the services: the policy is in place before anything else starts.
    rbac = RBACService(cluster, policy, options.group) if policy is not None else None
    devices = DeviceViewService(
        cluster,
        options.group,
        DeviceViewOptions(
            window=options.watch_history,
            window_bytes=options.watch_history_mib * MIB,
            patch_status=options.patch_status,
            status_interval=options.patch_status_interval,
        ),
    )
    metrics = CollectorRegistry()
    reservations = ReservationService(
        cluster.registry(DeviceReservationStrategy.for_group(options.group).resource),
        cluster.sources.claims,
        max_per_user=options.max_reservations_per_user,
    )
    services: list[Service] = [
        *([rbac] if rbac is not None else []),
        *([auth.service] if auth.service is not None else []),
        cluster,
    ]
    if isinstance(cluster, StandaloneCluster):
        namespaces = cluster.registry(NamespaceStrategy.core().resource)
        services += [
            SystemNamespaces(store),
            NamespaceDeleter(
                StoreSource(store, namespaces.resource.key_prefix(), name="namespaces"),
                namespaces,
                cluster.registries(),
            ),
            resource_claim_controller(cluster),
        ]
    services += [devices, reservations]
    if options.pool_status:
        pool_options = PoolStatusOptions(
            ttl=options.pool_status_ttl, pending_ttl=options.pool_status_pending_ttl
        )
        pool_status = PoolStatusService(
            cluster, options.group, devices, pool_options, metrics, reservations.devices
        )
        services.append(pool_status)
        pools = pool_status.index
    else:
        # The allocator reads the same pools as pool status would: one index either way.
        pools = PoolIndex(
            devices.view,
            cluster.sources.slices,
            cluster.sources.claims,
            reservations=reservations.devices,
        )
        services.append(PoolIndexService(pools))
    pool_view = PoolViewService(
        pools,
        options.group,
        PoolViewOptions(window=options.watch_history, window_bytes=options.watch_history_mib * MIB),
    )
    services.append(pool_view)
    services.append(
        PoolMetrics(pools, reservations.held, metrics, max_pools=options.metrics_max_pools)
    )
    allocation = AllocationService(cluster, pools, reservations, store)
    review_latency = review_histogram(metrics)
    for resource in cluster.served():
        if isinstance(resource.strategy, AllocationReviewStrategy):
            # Who asks may read each claim named, and reserve only with the verb for it.
            resource.strategy.answer_with(
                timed(
                    review_latency,
                    authorized_reviews(allocation.review, authorizer, options.group),
                )
            )
    server = APIServer(
        store,
        [*cluster.served(), *devices.served(), *pool_view.served()],
        options.settings,
        services=services,
        metrics=metrics,
    )
    if options.access_log:
        enable_access_log()
    app = build_app(
        server, cluster.authenticator, cluster.authorizer, access_log=options.access_log
    )
    config = uvicorn.Config(
        app,
        host=options.bind_address,
        port=options.secure_port,
        ssl_certfile=str(files.cert),
        ssl_keyfile=str(files.key),
        log_level=options.log_level,
        access_log=False,  # ours (server/accesslog.py) names who asked
        loop="uvloop",
        # uvicorn's httptools protocol with a bound on the request head, deadlines for
        # reading a request, and the client certificate in the scope: asked for (not
        # verified) in the handshake, each authenticator verifies it against its own CA.
        http=with_peer_certificates(
            BoundedHttpToolsProtocol.with_timeouts(
                options.read_header_timeout, options.read_timeout, options.write_stall_timeout
            )
        ),
        # TLS 1.2 with AEAD suites only, and TLS 1.3.
        ssl_context_factory=with_policy(ssl_context_factory(options.auth.ca_files())),
        timeout_graceful_shutdown=5,
        # Nothing in front of the server sets X-Forwarded-* for it to trust.
        proxy_headers=False,
        lifespan="on",
    )
    return config, server


def serve(options: ServeOptions) -> None:
    listener = bind(options.bind_address, options.secure_port)  # before anything is written
    config, _server = prepare(options)
    message = announcement(
        _server_url(options.bind_address, options.secure_port),
        options.cert_dir,
        options.token_auth_file or str(Path(options.cert_dir) / "tokens.csv"),
        options.kubeconfig_out,
        options.storage,
    )
    # Watches end when the server begins to shut down, rather than being cancelled (and
    # logged as failed requests) once the grace period is over.
    server = AnnouncingServer(config, message, on_shutdown=_server.handler.stopping.set)
    try:
        server.run(sockets=[listener])
    except KeyboardInterrupt:
        # uvicorn raises the Ctrl-C it caught again once it has shut down cleanly; the
        # exit status says so, without a traceback.
        raise SystemExit(130) from None

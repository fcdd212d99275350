"""Run the server: storage from a URL, TLS material, kubeconfig, uvicorn."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
from prometheus_client import CollectorRegistry

from ..api.resource import DRA_GROUP
from ..auth import (
    MASTERS,
    AllowAuthenticated,
    AuthenticatorChain,
    TokenAuthenticator,
    admin_token,
    generate_token_file,
    read_token_file,
)
from ..controllers.namespacedeletion import NamespaceDeleter
from ..kinds import SystemNamespaces
from ..kinds.namespace import NamespaceStrategy
from ..machinery.resource import VERBS
from ..sources import StoreSource
from ..storage import Store
from ..storage.cacher import WatchCache
from ..storage.etcd import EtcdConfig, EtcdStore
from ..storage.sqlite import SQLiteStore
from .app import APIServer, ServerSettings, Service, build_app
from .certs import ensure_serving_certs
from .cluster import RateLimit, StandaloneCluster
from .deviceview import DeviceViewOptions, DeviceViewService
from .kubeconfig import write_kubeconfig
from .poolstatus import PoolStatusOptions, PoolStatusService

log = logging.getLogger("apiserver")


@dataclass
class ServeOptions:
    bind_address: str = "127.0.0.1"
    secure_port: int = 6443
    storage: str = "sqlite:///data/apiserver.db"
    cert_dir: str = "certs"
    kubeconfig_out: str | None = None
    mode: str = "standalone"
    group: str = DRA_GROUP
    token_auth_file: str | None = None
    watch_history: int = 10_000
    watch_cache: bool = True
    patch_status: bool = True
    patch_status_interval: float = 1.0
    pool_status: bool = True
    pool_status_ttl: float = 3600.0
    pool_status_pending_ttl: float = 24 * 3600.0
    pool_status_create_rate: float = 0.2
    pool_status_create_burst: int = 10
    etcd_prefix: str = "/registry"
    etcd_cafile: str | None = None
    etcd_certfile: str | None = None
    etcd_keyfile: str | None = None
    etcd_request_timeout: float = 5.0
    etcd_compaction_interval: float = 300.0
    tls_san: list[str] = field(default_factory=list)
    log_level: str = "info"
    access_log: bool = False
    settings: ServerSettings = field(default_factory=ServerSettings)


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


def _server_url(bind_address: str, port: int) -> str:
    host = "127.0.0.1" if bind_address in ("0.0.0.0", "", "::") else bind_address
    if ":" in host:
        host = f"[{host}]"
    return f"https://{host}:{port}"


def prepare(options: ServeOptions) -> tuple[uvicorn.Config, APIServer]:
    if options.mode != "standalone":
        raise ValueError(
            f"--mode {options.mode} is not available yet: aggregated mode arrives with delegated"
            " authentication; use --mode standalone"
        )
    files = ensure_serving_certs(options.cert_dir, [options.bind_address, *options.tls_san])
    token_file = Path(options.token_auth_file or Path(options.cert_dir) / "tokens.csv")
    if not token_file.exists():
        generate_token_file(token_file)
    tokens = read_token_file(token_file)
    authenticator = AuthenticatorChain([TokenAuthenticator(dict(tokens))])
    if options.kubeconfig_out:
        token = admin_token(tokens)
        if token is None:
            raise ValueError(f"{token_file} has no token of a user in {MASTERS} for the kubeconfig")
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
                for s in StandaloneCluster.kinds(options.group)
                if s.verbs == VERBS
            ],
            window=options.watch_history,
        )
    cluster = StandaloneCluster(
        store,
        options.group,
        authenticator=authenticator,
        authorizer=AllowAuthenticated(),
        pool_status_create_limit=RateLimit(
            options.pool_status_create_rate, options.pool_status_create_burst
        ),
    )
    devices = DeviceViewService(
        cluster,
        options.group,
        DeviceViewOptions(
            window=options.watch_history,
            patch_status=options.patch_status,
            status_interval=options.patch_status_interval,
        ),
    )
    metrics = CollectorRegistry()
    namespaces = cluster.registry(NamespaceStrategy.core().resource)
    namespace_deleter = NamespaceDeleter(
        StoreSource(store, namespaces.resource.key_prefix(), name="namespaces"),
        namespaces,
        cluster.registries(),
    )
    services: list[Service] = [cluster, SystemNamespaces(store), namespace_deleter, devices]
    if options.pool_status:
        pool_options = PoolStatusOptions(
            ttl=options.pool_status_ttl, pending_ttl=options.pool_status_pending_ttl
        )
        services.append(PoolStatusService(cluster, options.group, devices, pool_options, metrics))
    server = APIServer(
        store,
        [*cluster.served(), *devices.served()],
        options.settings,
        services=services,
        metrics=metrics,
    )
    app = build_app(server, cluster.authenticator, cluster.authorizer)
    config = uvicorn.Config(
        app,
        host=options.bind_address,
        port=options.secure_port,
        ssl_certfile=str(files.cert),
        ssl_keyfile=str(files.key),
        log_level=options.log_level,
        access_log=options.access_log,
        loop="uvloop",
        http="httptools",
        timeout_graceful_shutdown=5,
        lifespan="on",
    )
    return config, server


def serve(options: ServeOptions) -> None:
    config, _server = prepare(options)
    uvicorn_server = uvicorn.Server(config)
    uvicorn_server.run()

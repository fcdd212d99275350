"""The command line: ``python -m apiserver serve ...`` (also installed as ``dra-apiserver``);
``shim`` runs the scheduler extender, ``schedule`` a stand-in for kube-scheduler (standalone
mode only)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .api.resource import DRA_GROUP
from .auth.delegation import AuthOptions
from .reservations import MAX_PER_USER as MAX_RESERVATIONS_PER_USER
from .schedule.run import SCHEDULER_NAME, ScheduleOptions, run_schedule
from .server.app import ServerSettings
from .server.certs import write_client_cert
from .server.installcerts import install_certs
from .server.poolmetrics import MAX_POOLS_DEFAULT
from .server.protocol import READ_HEADER_TIMEOUT, READ_TIMEOUT, WRITE_STALL_TIMEOUT
from .server.serve import ServeOptions, serve
from .shim.app import ShimOptions, run_shim
from .shim.door import SCHEDULER_USER
from .storage.fanout import STALL_TIMEOUT


def _names(value: str) -> list[str]:
    """A comma-separated list flag, as Kubernetes' string slices (repeatable)."""
    return [v.strip() for v in value.split(",") if v.strip()]


def _add_auth_flags(s: argparse.ArgumentParser) -> None:
    a = s.add_argument_group(
        "authentication and authorization",
        "client certificates in both modes; in aggregated mode front-proxy headers, and"
        " bearer tokens (TokenReview) and every request (SubjectAccessReview) checked by the"
        " kube-apiserver",
    )
    a.add_argument(
        "--client-ca-file",
        help="CA bundle: a client certificate it signed authenticates as CN (user) and O"
        " (groups); in aggregated mode read from the extension-apiserver-authentication"
        " ConfigMap when absent",
    )
    a.add_argument(
        "--requestheader-client-ca-file",
        help="CA bundle of the front proxy (kube-apiserver's --proxy-client-cert-file): only a"
        " connection with a certificate it signed may name the user in headers",
    )
    a.add_argument(
        "--requestheader-allowed-names",
        type=_names,
        action="extend",
        help="CNs the front proxy's certificate may have (comma-separated; empty: any)",
    )
    for name, default in (
        ("username", "X-Remote-User"),
        ("group", "X-Remote-Group"),
        ("uid", None),
    ):
        a.add_argument(
            f"--requestheader-{name}-headers",
            type=_names,
            action="extend",
            help=f"headers that carry the {name} (default {default or 'none'})",
        )
    a.add_argument(
        "--requestheader-extra-headers-prefix",
        type=_names,
        action="extend",
        help="header prefixes of the user's extra values (default X-Remote-Extra-)",
    )
    a.add_argument(
        "--authentication-kubeconfig",
        help="kubeconfig of the kube-apiserver for TokenReview and the ConfigMap (aggregated"
        " mode; default: the in-cluster ServiceAccount)",
    )
    a.add_argument(
        "--authorization-kubeconfig",
        help="kubeconfig of the kube-apiserver for SubjectAccessReview (aggregated mode;"
        " default: the in-cluster ServiceAccount)",
    )
    a.add_argument(
        "--authentication-skip-lookup",
        action="store_true",
        help="do not read the extension-apiserver-authentication ConfigMap",
    )
    a.add_argument(
        "--authentication-token-webhook-cache-ttl",
        type=float,
        default=10.0,
        help="seconds a TokenReview answer is kept (default 10)",
    )
    a.add_argument(
        "--authentication-config-resync-period",
        type=float,
        default=10.0,
        help="seconds between readings of the extension-apiserver-authentication ConfigMap"
        " (default 10)",
    )
    a.add_argument(
        "--authorization-webhook-cache-authorized-ttl",
        type=float,
        default=10.0,
        help="seconds an allowing SubjectAccessReview answer is kept (default 10)",
    )
    a.add_argument(
        "--authorization-webhook-cache-unauthorized-ttl",
        type=float,
        default=10.0,
        help="seconds a refusing SubjectAccessReview answer is kept (default 10)",
    )
    a.add_argument(
        "--authorization-always-allow-paths",
        type=_names,
        action="extend",
        help="paths allowed without a SubjectAccessReview; a final * makes a prefix"
        " (default /healthz,/readyz,/livez)",
    )


def _auth_options(args: argparse.Namespace) -> AuthOptions:
    defaults = AuthOptions()

    def listed(value: list[str] | None, default: list[str]) -> list[str]:
        return list(value) if value is not None else default

    return AuthOptions(
        client_ca_file=args.client_ca_file,
        requestheader_client_ca_file=args.requestheader_client_ca_file,
        requestheader_allowed_names=listed(args.requestheader_allowed_names, []),
        requestheader_username_headers=listed(
            args.requestheader_username_headers, defaults.requestheader_username_headers
        ),
        requestheader_uid_headers=listed(args.requestheader_uid_headers, []),
        requestheader_group_headers=listed(
            args.requestheader_group_headers, defaults.requestheader_group_headers
        ),
        requestheader_extra_headers_prefix=listed(
            args.requestheader_extra_headers_prefix,
            defaults.requestheader_extra_headers_prefix,
        ),
        authentication_kubeconfig=args.authentication_kubeconfig,
        authorization_kubeconfig=args.authorization_kubeconfig,
        authentication_skip_lookup=args.authentication_skip_lookup,
        authentication_token_webhook_cache_ttl=args.authentication_token_webhook_cache_ttl,
        authentication_config_resync=args.authentication_config_resync_period,
        authorization_webhook_cache_authorized_ttl=args.authorization_webhook_cache_authorized_ttl,
        authorization_webhook_cache_unauthorized_ttl=(
            args.authorization_webhook_cache_unauthorized_ttl
        ),
        authorization_always_allow_paths=listed(
            args.authorization_always_allow_paths, defaults.authorization_always_allow_paths
        ),
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m apiserver", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("serve", help="run the API server")
    s.add_argument(
        "--bind-address", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    s.add_argument("--secure-port", type=int, default=6443, help="HTTPS port (default 6443)")
    s.add_argument(
        "--storage",
        default="sqlite:///data/apiserver.db",
        help="storage URL: sqlite:///relative/path, sqlite:////absolute/path or"
        " etcd://HOST:PORT[,HOST:PORT...] (default sqlite:///data/apiserver.db)",
    )
    s.add_argument("--etcd-prefix", default="/registry", help="key prefix of every object in etcd")
    s.add_argument("--etcd-cafile", help="CA bundle that signed etcd's serving certificate (TLS)")
    s.add_argument("--etcd-certfile", help="client certificate for etcd (TLS client auth)")
    s.add_argument("--etcd-keyfile", help="key of --etcd-certfile")
    s.add_argument(
        "--etcd-request-timeout",
        type=float,
        default=5.0,
        help="deadline of one etcd call in seconds; past it the request is a 503 (default 5)",
    )
    s.add_argument(
        "--etcd-compaction-interval",
        type=float,
        default=300.0,
        help="seconds between compactions of etcd history, 0 to leave it to etcd (default 300)",
    )
    s.add_argument(
        "--watch-cache",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="serve watches, gets and lists from an in-memory cache of each kind (default on)",
    )
    s.add_argument(
        "--patch-status",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="write each ResourceSlicePatch's status (matched devices, SelectorsValid) and"
        " warning Events about faulty selectors (default on)",
    )
    s.add_argument(
        "--patch-status-interval",
        type=float,
        default=1.0,
        help="at most one status write per ResourceSlicePatch in this many seconds (default 1)",
    )
    s.add_argument(
        "--pool-status",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="answer ResourcePoolStatusRequests (KEP-5677) and delete them when their time to"
        " live is over (default on)",
    )
    s.add_argument(
        "--pool-status-ttl",
        type=float,
        default=3600.0,
        help="seconds a completed ResourcePoolStatusRequest is kept unless its"
        " spec.ttlSecondsAfterComplete says otherwise (default 3600)",
    )
    s.add_argument(
        "--pool-status-pending-ttl",
        type=float,
        default=24 * 3600.0,
        help="seconds a ResourcePoolStatusRequest that never completed is kept (default 86400)",
    )
    s.add_argument(
        "--pool-status-create-rate",
        type=float,
        default=0.2,
        help="ResourcePoolStatusRequests each user may create per second; beyond it (and the"
        " burst) a create is refused with 429 and Retry-After; 0 for no limit (default 0.2)",
    )
    s.add_argument(
        "--pool-status-create-burst",
        type=int,
        default=10,
        help="ResourcePoolStatusRequests a user may create at once before the rate applies"
        " (default 10)",
    )
    s.add_argument(
        "--metrics-max-pools",
        type=int,
        default=MAX_POOLS_DEFAULT,
        help="pools whose availability /metrics exports one by one; with more, only the"
        f" per-driver totals (default {MAX_POOLS_DEFAULT})",
    )
    s.add_argument(
        "--max-reservations-per-user",
        type=int,
        default=MAX_RESERVATIONS_PER_USER,
        help="DeviceReservations one user's reserving AllocationReviews may hold at once;"
        " beyond it a reserving review is refused with 429 and nothing is held; 0 for no cap"
        f" (default {MAX_RESERVATIONS_PER_USER})",
    )
    s.add_argument(
        "--cert-dir",
        default="certs",
        help="where the CA and serving certificate live or are generated",
    )
    s.add_argument(
        "--tls-san",
        action="append",
        default=[],
        help="extra DNS name or IP for the serving certificate",
    )
    s.add_argument(
        "--tls-cert-file",
        help="serving certificate (PEM, the chain after it) to use instead of generating one",
    )
    s.add_argument("--tls-private-key-file", help="key of --tls-cert-file")
    s.add_argument("--kubeconfig-out", help="write a kubeconfig for the admin user to this path")
    s.add_argument(
        "--mode",
        choices=["standalone", "aggregated"],
        default="standalone",
        help="standalone: serve every kind from our store; aggregated: behind a kube-apiserver,"
        " reading slices, claims, classes and nodes from it (default standalone)",
    )
    s.add_argument(
        "--kubeconfig",
        help="aggregated mode: kubeconfig of the kube-apiserver (default: in-cluster configuration)",
    )
    s.add_argument("--group", default=DRA_GROUP, help=f"API group to serve (default {DRA_GROUP})")
    s.add_argument(
        "--token-auth-file",
        help="CSV of token,user,uid[,groups]; generated in --cert-dir if absent",
    )
    s.add_argument(
        "--authorization-mode",
        choices=["RBAC", "AlwaysAllow"],
        default="RBAC",
        help="RBAC (default): roles and bindings decide; AlwaysAllow: any authenticated user",
    )
    s.add_argument(
        "--watch-history",
        type=int,
        default=10_000,
        help="revisions of history kept for watches (SQLite), events kept per kind (watch cache)",
    )
    s.add_argument(
        "--watch-history-mib",
        type=int,
        default=64,
        help="most MiB the events kept in memory for watches may take, per kind (watch cache"
        " and Device view; their JSON bytes); 0 for no bound but --watch-history (default 64)",
    )
    s.add_argument(
        "--min-request-timeout", type=float, default=1800.0, help="default watch timeout in seconds"
    )
    s.add_argument(
        "--bookmark-interval", type=float, default=60.0, help="seconds between watch bookmarks"
    )
    s.add_argument("--max-request-body-bytes", type=int, default=3 * 1024 * 1024)
    s.add_argument(
        "--read-header-timeout",
        type=float,
        default=READ_HEADER_TIMEOUT,
        help="seconds a request's headers may take to arrive (from the connection, or the"
        " request's first byte); past it the connection is closed (default"
        f" {READ_HEADER_TIMEOUT:g}, as kube-apiserver)",
    )
    s.add_argument(
        "--read-timeout",
        type=float,
        default=READ_TIMEOUT,
        help="seconds a request's body may take to arrive after its headers; past it the"
        f" request is answered 408 and the connection closed (default {READ_TIMEOUT:g})",
    )
    s.add_argument(
        "--write-stall-timeout",
        type=float,
        default=WRITE_STALL_TIMEOUT,
        help="seconds a client may read nothing of a response (a watch it stopped reading)"
        f" before its connection is closed (default {WRITE_STALL_TIMEOUT:g})",
    )
    s.add_argument(
        "--watch-stall-timeout",
        type=float,
        default=STALL_TIMEOUT,
        help="seconds a watcher's buffer of unsent events may stay full before the watcher"
        " is closed, logged and counted in apiserver_terminated_watchers_total, as"
        f" kube-apiserver's watch cache does (default {STALL_TIMEOUT:g})",
    )
    s.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    s.add_argument(
        "--access-log",
        action="store_true",
        help="write one JSON line per request to stderr, as kube-apiserver's httplog and audit"
        " log: verb, resource, namespace, name, URI, the user (and whom it impersonated),"
        " response code and latency",
    )
    _add_auth_flags(s)
    c = commands.add_parser(
        "client-cert",
        help="sign a client certificate for a user with the CA of --cert-dir (for kubectl and"
        " --client-ca-file)",
    )
    c.add_argument("--cert-dir", default="certs", help="where the CA (ca.crt, ca.key) lives")
    c.add_argument("--user", required=True, help="the user name (the certificate's CN)")
    c.add_argument(
        "--group", action="append", default=[], help="a group of the user (O); repeatable"
    )
    c.add_argument("--out", required=True, help="write OUT.crt and OUT.key")
    i = commands.add_parser(
        "install-certs",
        help="make the in-cluster serving certificate, its Secret and a kustomization that"
        " installs the manifests with the caBundle; prints the caBundle",
    )
    i.add_argument("--out", default="certs", help="where to write them (git ignores certs/)")
    i.add_argument(
        "--base",
        default="manifests/base",
        help="the manifests to install: manifests/base or manifests/overlays/ha",
    )
    i.add_argument("--components", default="manifests/components", help="kustomize components")
    i.add_argument("--group", default=DRA_GROUP, help=f"{DRA_GROUP} (default) or resource.x-k8s.io")
    i.add_argument("--namespace", default="dra-system")
    i.add_argument("--service", default="dra-apiserver")
    i.add_argument("--secret", default="dra-apiserver-tls")
    i.add_argument("--cluster-domain", default="cluster.local")
    i.add_argument(
        "--scheduler-shim",
        action="store_true",
        help="also the scheduler shim and a second kube-scheduler using it, with the shim's"
        " serving certificate",
    )
    _shim_parser(commands)
    _schedule_parser(commands)
    return parser


def _shim_parser(commands: Any) -> None:
    s = commands.add_parser(
        "shim", help="run the scheduler shim, a kube-scheduler extender (filter, prioritize, bind)"
    )
    s.add_argument(
        "--kubeconfig",
        help="credentials for the API server (default: the pod's ServiceAccount, in a cluster)",
    )
    s.add_argument("--server", help="the API server's URL (default: the kubeconfig's)")
    s.add_argument(
        "--group",
        default=DRA_GROUP,
        help=f"API group of the server's own kinds (default {DRA_GROUP})",
    )
    s.add_argument("--bind-address", default="127.0.0.1", help="address to listen on")
    s.add_argument("--port", type=int, default=8888, help="HTTPS port (default 8888)")
    s.add_argument(
        "--cert-dir",
        default="certs/shim",
        help="where a self-signed serving certificate is made when no --tls-cert-file is given",
    )
    s.add_argument("--tls-cert-file", help="serving certificate")
    s.add_argument("--tls-private-key-file", help="key of --tls-cert-file")
    s.add_argument("--tls-san", action="append", default=[], help="extra name for the certificate")
    s.add_argument(
        "--attach-timeout",
        type=float,
        default=600.0,
        help="seconds a bind waits for fabric devices to be attached before it fails (default 600)",
    )
    s.add_argument(
        "--client-ca-file",
        help="CA of the scheduler's client certificate (default: with a self-made serving"
        " certificate, the CA of --cert-dir, which also signs <cert-dir>/scheduler.crt;"
        " otherwise none, and only bearer tokens checked by TokenReview are accepted)",
    )
    s.add_argument(
        "--allowed-users",
        type=_names,
        default=[SCHEDULER_USER],
        help="the users (client certificate CN or TokenReview user name) that may call"
        f" filter, prioritize and bind, comma-separated (default {SCHEDULER_USER})",
    )
    s.add_argument(
        "--allowed-groups",
        type=_names,
        default=[],
        help="the groups that may call filter, prioritize and bind, comma-separated (none)",
    )
    s.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )


SCHEDULE_HELP = """\
A stand-in for kube-scheduler, for standalone mode ONLY (a real cluster runs kube-scheduler
with the shim configured as its extender). It watches pods whose spec.schedulerName is
--scheduler-name and that have no node, and for each lists the nodes and asks the shim over
HTTPS exactly as kube-scheduler asks an extender: filter, prioritize over the nodes that
passed, then bind to the best-scored node (ties in name order, one further per attempt). A
pod that fits nowhere, or whose bind fails, or that meets an unreachable shim, is tried
again after a per-pod backoff. It holds no placement logic of its own."""


def _schedule_parser(commands: Any) -> None:
    s = commands.add_parser(
        "schedule",
        help="standalone mode only: a stand-in for kube-scheduler that places pods through"
        " the shim",
        description=SCHEDULE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("--kubeconfig", required=True, help="credentials for the API server")
    s.add_argument("--server", help="the API server's URL (default: the kubeconfig's)")
    s.add_argument(
        "--shim-url",
        default="https://127.0.0.1:8888",
        help="the shim's URL, its extender urlPrefix (default https://127.0.0.1:8888)",
    )
    s.add_argument(
        "--shim-ca-file",
        default="certs/shim/ca.crt",
        help="CA of the shim's serving certificate (default certs/shim/ca.crt, where the"
        " shim makes it by default)",
    )
    s.add_argument(
        "--shim-client-cert-file",
        default="certs/shim/scheduler.crt",
        help="the client certificate presented to the shim, as kube-scheduler's extender"
        " tlsConfig.certFile (default certs/shim/scheduler.crt, which the shim makes by"
        " default)",
    )
    s.add_argument(
        "--shim-client-key-file",
        default="certs/shim/scheduler.key",
        help="its key, as tlsConfig.keyFile (default certs/shim/scheduler.key)",
    )
    s.add_argument(
        "--scheduler-name",
        default=SCHEDULER_NAME,
        help=f"the spec.schedulerName of the pods to place (default {SCHEDULER_NAME})",
    )
    s.add_argument(
        "--node-cache-capable",
        action="store_true",
        help="send node names instead of Node objects (the extender's nodeCacheCapable)",
    )
    s.add_argument(
        "--shim-timeout",
        type=float,
        default=660.0,
        help="seconds one call to the shim may take, 0 for no limit; a bind waits for"
        " attaching (default 660, beyond the shim's default attach timeout)",
    )
    s.add_argument(
        "--initial-backoff",
        type=float,
        default=1.0,
        help="seconds before a pod's first retry (default 1, as kube-scheduler)",
    )
    s.add_argument(
        "--max-backoff",
        type=float,
        default=10.0,
        help="most seconds between a pod's retries (default 10, as kube-scheduler)",
    )
    s.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )


@contextlib.contextmanager
def _exit_on(*refusals: type[Exception]) -> Iterator[None]:
    """What a command refuses (a bad flag or file) as one ``error:`` line and exit code 2."""
    try:
        yield
    except refusals as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc


def _configure_logging(level: str) -> None:
    """The server's own loggers (``apiserver.*``) to stderr at ``--log-level``; uvicorn's
    loggers and the access log keep their own handlers and do not reach these."""
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if getattr(args, "log_level", None):
        _configure_logging(args.log_level)
    if args.command == "install-certs":
        with _exit_on(ValueError):
            bundle = install_certs(
                Path(args.out),
                Path(args.base),
                components=Path(args.components),
                group=args.group,
                namespace=args.namespace,
                service=args.service,
                secret_name=args.secret,
                cluster_domain=args.cluster_domain,
                scheduler_shim=args.scheduler_shim,
            )
        print(bundle)
        return
    if args.command == "shim":
        shim = ShimOptions(
            kubeconfig=args.kubeconfig,
            server=args.server,
            group=args.group,
            bind_address=args.bind_address,
            port=args.port,
            cert_dir=args.cert_dir,
            tls_cert_file=args.tls_cert_file,
            tls_private_key_file=args.tls_private_key_file,
            tls_san=args.tls_san,
            attach_timeout=args.attach_timeout,
            client_ca_file=args.client_ca_file,
            allowed_users=args.allowed_users,
            allowed_groups=args.allowed_groups,
            log_level=args.log_level,
        )
        with _exit_on(ValueError, OSError):
            run_shim(shim)
        return
    if args.command == "schedule":
        schedule = ScheduleOptions(
            kubeconfig=args.kubeconfig,
            server=args.server,
            shim_url=args.shim_url,
            shim_ca_file=args.shim_ca_file,
            shim_client_cert_file=args.shim_client_cert_file,
            shim_client_key_file=args.shim_client_key_file,
            scheduler_name=args.scheduler_name,
            node_cache_capable=args.node_cache_capable,
            shim_timeout=args.shim_timeout,
            initial_backoff=args.initial_backoff,
            max_backoff=args.max_backoff,
        )
        with _exit_on(ValueError, OSError):
            run_schedule(schedule)
        return
    if args.command == "serve":
        options = ServeOptions(
            bind_address=args.bind_address,
            secure_port=args.secure_port,
            storage=args.storage,
            cert_dir=args.cert_dir,
            kubeconfig_out=args.kubeconfig_out,
            mode=args.mode,
            kubeconfig=args.kubeconfig,
            group=args.group,
            token_auth_file=args.token_auth_file,
            authorization_mode=args.authorization_mode,
            watch_history=args.watch_history,
            watch_history_mib=args.watch_history_mib,
            watch_cache=args.watch_cache,
            patch_status=args.patch_status,
            patch_status_interval=args.patch_status_interval,
            pool_status=args.pool_status,
            pool_status_ttl=args.pool_status_ttl,
            pool_status_pending_ttl=args.pool_status_pending_ttl,
            pool_status_create_rate=args.pool_status_create_rate,
            pool_status_create_burst=args.pool_status_create_burst,
            metrics_max_pools=args.metrics_max_pools,
            max_reservations_per_user=args.max_reservations_per_user,
            etcd_prefix=args.etcd_prefix,
            etcd_cafile=args.etcd_cafile,
            etcd_certfile=args.etcd_certfile,
            etcd_keyfile=args.etcd_keyfile,
            etcd_request_timeout=args.etcd_request_timeout,
            etcd_compaction_interval=args.etcd_compaction_interval,
            tls_san=args.tls_san,
            tls_cert_file=args.tls_cert_file,
            tls_private_key_file=args.tls_private_key_file,
            log_level=args.log_level,
            access_log=args.access_log,
            read_header_timeout=args.read_header_timeout,
            read_timeout=args.read_timeout,
            write_stall_timeout=args.write_stall_timeout,
            watch_stall_timeout=args.watch_stall_timeout,
            settings=ServerSettings(
                max_body_bytes=args.max_request_body_bytes,
                min_request_timeout=args.min_request_timeout,
                bookmark_interval=args.bookmark_interval,
            ),
            auth=_auth_options(args),
        )
        with _exit_on(ValueError):
            serve(options)
    elif args.command == "client-cert":
        with _exit_on(ValueError):
            cert, key = write_client_cert(args.cert_dir, args.user, args.group, args.out)
        print(f"wrote {cert} and {key}")

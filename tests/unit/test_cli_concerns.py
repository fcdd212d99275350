"""Each concern's flags reach the part they configure: the flags are parsed by the real
command line and the server assembled by ``prepare`` (nothing started), then the part is
asked what it was given. The shim and the stand-in scheduler are checked at their options
(their e2e tests run them with these flags); ``install-certs`` and ``client-cert`` run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

import pytest
import uvicorn
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from apiserver import cli
from apiserver.auth.x509 import ClientCertAuthenticator
from apiserver.kinds.admission import CreateRateLimit
from apiserver.kinds.resourcepoolstatusrequest import ResourcePoolStatusRequestStrategy
from apiserver.reservations import ReservationService
from apiserver.schedule.run import ScheduleOptions
from apiserver.server.app import APIServer
from apiserver.server.certs import cert_pem, ensure_ca, make_ca
from apiserver.server.cluster import StandaloneCluster
from apiserver.server.deviceview import DeviceViewService
from apiserver.server.poolmetrics import PoolMetrics
from apiserver.server.poolstatus import PoolStatusService
from apiserver.server.poolview import PoolViewService
from apiserver.server.rbac import RBACService
from apiserver.server.serve import ServeOptions, prepare
from apiserver.shim.app import ShimOptions
from apiserver.storage.cacher import WatchCache
from apiserver.storage.etcd import EtcdStore
from apiserver.storage.sqlite import SQLiteStore
from apiserver.toolkit.options import from_args

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]


def _options(cls: type[T], command: str, *flags: str) -> T:
    return from_args(cls, cli.build_parser().parse_args([command, *flags]))


def _prepared(tmp_path: Path, *flags: str) -> tuple[uvicorn.Config, APIServer]:
    options = _options(
        ServeOptions,
        "serve",
        "--cert-dir",
        str(tmp_path / "certs"),
        "--storage",
        f"sqlite:///{tmp_path / 'store.db'}",
        *flags,
    )
    return prepare(options)


def _service(server: APIServer, kind: type[T]) -> T:
    [service] = [s for s in server.services if isinstance(s, kind)]
    return service


def test_serving_flags_reach_uvicorn(tmp_path: Path) -> None:
    config, _ = _prepared(
        tmp_path,
        "--bind-address=127.0.0.2",
        "--secure-port=7443",
        "--read-header-timeout=3",
        "--read-timeout=4",
        "--write-stall-timeout=5",
        "--log-level=debug",
    )
    assert (config.host, config.port, config.log_level) == ("127.0.0.2", 7443, "debug")
    protocol: Any = config.http
    assert (
        protocol.read_header_timeout,
        protocol.read_timeout,
        protocol.write_stall_timeout,
    ) == (3, 4, 5)
    assert Path(str(config.ssl_certfile)).parent == tmp_path / "certs"


def test_the_group_flag_moves_our_kinds(tmp_path: Path) -> None:
    _, server = _prepared(tmp_path, "--group=resource.x-k8s.io")
    groups = {r.resource.group for r in server.served}
    assert "resource.x-k8s.io" in groups
    assert "resource.k8s.io" in groups  # the upstream kinds keep theirs
    devices = [r for r in server.served if r.resource.plural == "devices"]
    assert {r.resource.group for r in devices} == {"resource.x-k8s.io"}


def test_request_flags_reach_the_handler(tmp_path: Path) -> None:
    _, server = _prepared(
        tmp_path,
        "--max-request-body-bytes=1234",
        "--min-request-timeout=5",
        "--bookmark-interval=2",
    )
    handler = server.handler
    assert (handler.max_body_bytes, handler.min_request_timeout, handler.bookmark_interval) == (
        1234,
        5,
        2,
    )


def test_storage_flags_reach_the_store_and_its_watch_cache(tmp_path: Path) -> None:
    _, server = _prepared(
        tmp_path, "--watch-history=7", "--watch-history-mib=2", "--watch-stall-timeout=3"
    )
    store = server.store
    assert isinstance(store, WatchCache)
    assert (store.window, store.window_bytes, store.stall_timeout) == (7, 2 * 1024 * 1024, 3)
    assert isinstance(store.backend, SQLiteStore)
    _, uncached = _prepared(tmp_path, "--no-watch-cache")
    assert isinstance(uncached.store, SQLiteStore)


def test_etcd_flags_reach_the_etcd_client(tmp_path: Path) -> None:
    _, server = _prepared(
        tmp_path,
        "--storage=etcd://127.0.0.1:2379,127.0.0.2:2379",
        "--no-watch-cache",
        "--etcd-prefix=/elsewhere/",
        "--etcd-request-timeout=2",
        "--etcd-compaction-interval=0",
    )
    store = server.store
    assert isinstance(store, EtcdStore)
    config = store.config
    assert config.endpoints == ("127.0.0.1:2379", "127.0.0.2:2379")
    assert (config.prefix, config.request_timeout, config.compaction_interval) == (
        "/elsewhere",
        2,
        0,
    )


def test_auth_flags_reach_the_authenticator_and_the_authorizer(tmp_path: Path) -> None:
    ca = tmp_path / "clients.crt"
    ca.write_bytes(cert_pem(make_ca("clients")[0]))
    _, server = _prepared(tmp_path, "--client-ca-file", str(ca))
    assert any(isinstance(s, RBACService) for s in server.services)
    authenticator: Any = _service(server, StandaloneCluster).authenticator
    assert any(isinstance(m, ClientCertAuthenticator) for m in authenticator.methods)
    _, allowing = _prepared(tmp_path, "--authorization-mode=AlwaysAllow")
    assert not any(isinstance(s, RBACService) for s in allowing.services)


def test_device_view_flags_reach_the_view_and_the_patch_status_controller(
    tmp_path: Path,
) -> None:
    _, server = _prepared(tmp_path, "--patch-status-interval=4", "--watch-history=9")
    devices = _service(server, DeviceViewService)
    assert devices.controller is not None
    assert devices.controller.queue.interval == 4
    assert devices.store._window.size == 9
    _, without = _prepared(tmp_path, "--no-patch-status")
    assert _service(without, DeviceViewService).controller is None


def test_pools_flags_reach_the_pool_view_and_the_metrics(tmp_path: Path) -> None:
    _, server = _prepared(tmp_path, "--metrics-max-pools=7", "--watch-history=11")
    assert _service(server, PoolMetrics).max_pools == 7
    assert _service(server, PoolViewService).pools.store._window.size == 11


def test_pool_status_flags_reach_the_cleaner_and_the_create_limit(tmp_path: Path) -> None:
    _, server = _prepared(
        tmp_path,
        "--pool-status-ttl=5",
        "--pool-status-pending-ttl=6",
        "--pool-status-create-rate=2",
        "--pool-status-create-burst=3",
    )
    cleaner = _service(server, PoolStatusService).cleaner
    assert (cleaner.ttl, cleaner.pending_ttl) == (5, 6)
    cluster = _service(server, StandaloneCluster)
    requests = ResourcePoolStatusRequestStrategy.for_group("resource.k8s.io").resource
    [limit] = [
        p for p in cluster.registry(requests).admission.plugins if isinstance(p, CreateRateLimit)
    ]
    assert (limit.limiter.rate, limit.limiter.burst) == (2, 3)
    _, without = _prepared(tmp_path, "--no-pool-status")
    assert not any(isinstance(s, PoolStatusService) for s in without.services)


def test_allocation_flags_reach_the_reservations(tmp_path: Path) -> None:
    _, server = _prepared(tmp_path, "--max-reservations-per-user=3")
    assert _service(server, ReservationService).max_per_user == 3


def test_shim_flags_reach_its_options() -> None:
    options = _options(
        ShimOptions,
        "shim",
        "--kubeconfig=kc",
        "--server=https://api",
        "--group=resource.x-k8s.io",
        "--port=9999",
        "--tls-san=a",
        "--tls-san=b",
        "--attach-timeout=5",
        "--allowed-users=x, y",
        "--allowed-groups=g",
    )
    assert options == ShimOptions(
        kubeconfig="kc",
        server="https://api",
        group="resource.x-k8s.io",
        port=9999,
        tls_san=["a", "b"],
        attach_timeout=5,
        allowed_users=["x", "y"],
        allowed_groups=["g"],
    )


def test_schedule_flags_reach_its_options() -> None:
    options = _options(
        ScheduleOptions,
        "schedule",
        "--kubeconfig=kc",
        "--shim-url=https://shim:1",
        "--node-cache-capable",
        "--shim-timeout=0",
        "--initial-backoff=0.2",
        "--max-backoff=1",
        "--scheduler-name=other",
    )
    assert options == ScheduleOptions(
        kubeconfig="kc",
        shim_url="https://shim:1",
        node_cache_capable=True,
        shim_timeout=0,
        initial_backoff=0.2,
        max_backoff=1,
        scheduler_name="other",
    )


def test_install_certs_flags_reach_the_files_it_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    cli.main(
        [
            "install-certs",
            "--out",
            str(out),
            "--base",
            str(REPO / "manifests" / "base"),
            "--components",
            str(REPO / "manifests" / "components"),
            "--namespace=ns1",
            "--service=svc",
            "--secret=sec",
            "--cluster-domain=example.org",
        ]
    )
    assert capsys.readouterr().out.strip()  # the caBundle
    secret = yaml.safe_load((out / "secret.yaml").read_text())
    assert (secret["metadata"]["name"], secret["metadata"]["namespace"]) == ("sec", "ns1")
    cert = x509.load_pem_x509_certificate((out / "tls.crt").read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "svc.ns1.svc.example.org" in names.get_values_for_type(x509.DNSName)
    assert not (out / "shim-secret.yaml").exists()


def test_client_cert_flags_reach_the_certificate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "certs").mkdir()
    ensure_ca(tmp_path / "certs")
    out = tmp_path / "alice"
    cli.main(
        [
            "client-cert",
            "--cert-dir",
            str(tmp_path / "certs"),
            "--user=alice",
            "--group=dev",
            "--group=ops",
            "--out",
            str(out),
        ]
    )
    assert "wrote" in capsys.readouterr().out
    cert = x509.load_pem_x509_certificate(Path(f"{out}.crt").read_bytes())
    subject = cert.subject
    assert [a.value for a in subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == ["alice"]
    groups = [a.value for a in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    assert sorted(groups) == ["dev", "ops"]
    assert os.stat(f"{out}.key").st_mode & 0o077 == 0

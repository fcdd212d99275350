"""``python -m apiserver schedule``: the stand-in scheduler's options and process — the API
server's credentials from a kubeconfig (as the shim takes them), the shim's URL, the CA
that signed its certificate, and the client certificate the scheduler presents to it (as
kube-scheduler's extender ``tlsConfig`` carries ``caFile``, ``certFile`` and ``keyFile``)."""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from pathlib import Path

from ..kubeclient import ClusterConfig, KubeClient, load_kubeconfig
from .extender import Extender
from .scheduler import StandInScheduler

SCHEDULER_NAME = "dra-extension-scheduler"


@dataclass
class ScheduleOptions:
    kubeconfig: str
    server: str | None = None
    shim_url: str = "https://127.0.0.1:8888"
    shim_ca_file: str | None = "certs/shim/ca.crt"
    """The CA the shim's certificate chains to; None trusts the system's CAs."""
    shim_client_cert_file: str | None = "certs/shim/scheduler.crt"
    shim_client_key_file: str | None = "certs/shim/scheduler.key"
    """The scheduler's client certificate for the shim (the shim makes this pair beside its
    CA by default); None presents none (the shim then answers 401)."""
    scheduler_name: str = SCHEDULER_NAME
    node_cache_capable: bool = False
    shim_timeout: float = 660.0
    initial_backoff: float = 1.0
    max_backoff: float = 10.0


def _tls(options: ScheduleOptions) -> ssl.SSLContext:
    """Trust in the shim's certificate, and the scheduler's own for the shim to check."""
    ca_file = options.shim_ca_file
    if ca_file is not None and not Path(ca_file).exists():
        raise ValueError(f"--shim-ca-file {ca_file}: no such file (the shim writes it at start)")
    context = ssl.create_default_context(cafile=ca_file)
    cert, key = options.shim_client_cert_file, options.shim_client_key_file
    if cert and key:
        for flag, path in (("--shim-client-cert-file", cert), ("--shim-client-key-file", key)):
            if not Path(path).exists():
                raise ValueError(f"{flag} {path}: no such file (the shim writes it at start)")
        context.load_cert_chain(cert, key)
    return context


async def _run(options: ScheduleOptions, config: ClusterConfig) -> None:
    api = KubeClient(config, user_agent=SCHEDULER_NAME)
    extender = Extender(
        options.shim_url,
        _tls(options),
        node_cache_capable=options.node_cache_capable,
        timeout=options.shim_timeout or None,
    )
    try:
        await StandInScheduler(
            api,
            extender,
            options.scheduler_name,
            initial_backoff=options.initial_backoff,
            max_backoff=options.max_backoff,
        ).run()
    finally:
        await extender.aclose()
        await api.aclose()


def run_schedule(options: ScheduleOptions) -> None:
    asyncio.run(_run(options, load_kubeconfig(options.kubeconfig, options.server)))

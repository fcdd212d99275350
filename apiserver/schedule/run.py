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
from ..toolkit.options import log_level_option, non_negative, option, switch
from .extender import Extender
from .scheduler import StandInScheduler

SCHEDULER_NAME = "dra-extension-scheduler"


@dataclass
class ScheduleOptions:
    kubeconfig: str = option("--kubeconfig", help="credentials for the API server")
    server: str | None = option(
        "--server", None, "the API server's URL (default: the kubeconfig's)"
    )
    shim_url: str = option(
        "--shim-url", "https://127.0.0.1:8888", "the shim's URL, its extender urlPrefix"
    )
    shim_ca_file: str | None = option(
        "--shim-ca-file",
        "certs/shim/ca.crt",
        "CA of the shim's serving certificate (default {default}, where the shim makes it"
        " by default)",
    )
    """The CA the shim's certificate chains to; None trusts the system's CAs."""
    shim_client_cert_file: str | None = option(
        "--shim-client-cert-file",
        "certs/shim/scheduler.crt",
        "the client certificate presented to the shim, as kube-scheduler's extender"
        " tlsConfig.certFile (default {default}, which the shim makes by default)",
    )
    shim_client_key_file: str | None = option(
        "--shim-client-key-file", "certs/shim/scheduler.key", "its key, as tlsConfig.keyFile"
    )
    """The scheduler's client certificate for the shim (the shim makes this pair beside its
    CA by default); None presents none (the shim then answers 401)."""
    scheduler_name: str = option(
        "--scheduler-name", SCHEDULER_NAME, "the spec.schedulerName of the pods to place"
    )
    node_cache_capable: bool = switch(
        "--node-cache-capable",
        "send node names instead of Node objects (the extender's nodeCacheCapable)",
    )
    shim_timeout: float = option(
        "--shim-timeout",
        660.0,
        "seconds one call to the shim may take, 0 for no limit; a bind waits for"
        " attaching (default {default}, beyond the shim's default attach timeout)",
        check=non_negative,
    )
    initial_backoff: float = option(
        "--initial-backoff",
        1.0,
        "seconds before a pod's first retry (default {default}, as kube-scheduler)",
        check=non_negative,
    )
    max_backoff: float = option(
        "--max-backoff",
        10.0,
        "most seconds between a pod's retries (default {default}, as kube-scheduler)",
        check=non_negative,
    )
    log_level: str = log_level_option()


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

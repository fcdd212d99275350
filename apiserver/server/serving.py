"""How the server listens: address and port, its TLS certificate, connection deadlines and
logging (``ServingOptions``), and the uvicorn configuration made from them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp

from ..toolkit.options import (
    gc_young_threshold_option,
    log_level_option,
    option,
    port_number,
    positive,
    switch,
)
from .certs import ServingFiles, ensure_serving_certs
from .protocol import (
    READ_HEADER_TIMEOUT,
    READ_TIMEOUT,
    WRITE_STALL_TIMEOUT,
    BoundedHttpToolsProtocol,
)
from .tlspeer import ssl_context_factory, with_peer_certificates
from .tlspolicy import with_policy


@dataclass
class ServingOptions:
    bind_address: str = option("--bind-address", "127.0.0.1", "address to listen on")
    secure_port: int = option("--secure-port", 6443, "HTTPS port", check=port_number)
    cert_dir: str = option(
        "--cert-dir", "certs", "where the CA and serving certificate live or are generated"
    )
    tls_san: list[str] = option(
        "--tls-san", [], "extra DNS name or IP for the serving certificate", action="append"
    )
    tls_cert_file: str | None = option(
        "--tls-cert-file",
        None,
        "serving certificate (PEM, the chain after it) to use instead of generating one",
    )
    tls_private_key_file: str | None = option(
        "--tls-private-key-file", None, "key of --tls-cert-file"
    )
    kubeconfig_out: str | None = option(
        "--kubeconfig-out", None, "write a kubeconfig for the admin user to this path"
    )
    read_header_timeout: float = option(
        "--read-header-timeout",
        READ_HEADER_TIMEOUT,
        "seconds a request's headers may take to arrive (from the connection, or the"
        " request's first byte); past it the connection is closed (default {default}, as"
        " kube-apiserver)",
        check=positive,
    )
    read_timeout: float = option(
        "--read-timeout",
        READ_TIMEOUT,
        "seconds a request's body may take to arrive after its headers; past it the"
        " request is answered 408 and the connection closed",
        check=positive,
    )
    write_stall_timeout: float = option(
        "--write-stall-timeout",
        WRITE_STALL_TIMEOUT,
        "seconds a client may read nothing of a response (a watch it stopped reading)"
        " before its connection is closed",
        check=positive,
    )
    log_level: str = log_level_option()
    gc_young_threshold: int = gc_young_threshold_option()
    access_log: bool = switch(
        "--access-log",
        "write one JSON line per request to stderr, as kube-apiserver's httplog and audit"
        " log: verb, resource, namespace, name, URI, the user (and whom it impersonated),"
        " response code and latency",
    )

    def validate(self) -> list[str]:
        if (self.tls_cert_file is None) != (self.tls_private_key_file is None):
            return ["--tls-cert-file and --tls-private-key-file go together"]
        return []

    @property
    def url(self) -> str:
        """Where a client on this machine reaches the server."""
        host = "127.0.0.1" if self.bind_address in ("0.0.0.0", "", "::") else self.bind_address
        if ":" in host:
            host = f"[{host}]"
        return f"https://{host}:{self.secure_port}"


def serving_files(options: ServingOptions) -> ServingFiles:
    """The given certificate (one made for the Service by ``install-certs``, mounted from a
    Secret), or one made in ``--cert-dir`` for the address and ``--tls-san`` names."""
    if options.tls_cert_file and options.tls_private_key_file:
        cert = Path(options.tls_cert_file)
        return ServingFiles(cert, cert, Path(options.tls_private_key_file))
    return ensure_serving_certs(options.cert_dir, [options.bind_address, *options.tls_san])


IDLE_TIMEOUT = 90
"""Seconds a kept-alive connection may sit idle between requests: kube-apiserver's
``IdleTimeout`` (Go's default transport keeps idle connections as long). uvicorn's own 5 s
equals httpx's keep-alive expiry, so a client reusing a connection just then could meet the
server's close of it and lose its request; a server that waits longer than its clients do
leaves the closing to them."""


def uvicorn_config(
    app: ASGIApp, options: ServingOptions, files: ServingFiles, client_cas: list[str]
) -> uvicorn.Config:
    """uvicorn serving ``app`` over TLS as the options say; ``client_cas``: the CA files
    the TLS layer trusts where it cannot leave verifying to each authenticator."""
    return uvicorn.Config(
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
        ssl_context_factory=with_policy(ssl_context_factory(client_cas)),
        timeout_graceful_shutdown=5,
        timeout_keep_alive=IDLE_TIMEOUT,
        # Nothing in front of the server sets X-Forwarded-* for it to trust.
        proxy_headers=False,
        lifespan="on",
    )

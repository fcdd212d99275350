"""A kubeconfig's current context, turned into an HTTPS client of that kube-apiserver.

Delegated authentication and authorization call the kube-apiserver named by
``--authentication-kubeconfig`` / ``--authorization-kubeconfig``. Supported: the server URL,
``certificate-authority`` / ``-data``, ``insecure-skip-tls-verify``, ``tls-server-name``, and
a bearer ``token`` / ``tokenFile`` or a ``client-certificate`` / ``-key`` (file or data); a
user with ``exec``, ``auth-provider`` or a password is refused at start, not ignored.
Relative file paths are relative to the kubeconfig, as kubectl reads them.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml


class KubeconfigError(ValueError):
    pass


IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD = 60.0


class _Credentials(httpx.Auth):
    """A fixed token, or a token file re-read every minute (projected tokens rotate); and
    the TLS server name to ask for, when the kubeconfig names one."""

    def __init__(self, token: str | None, token_file: Path | None, server_name: str | None) -> None:
        self.token = token
        self.token_file = token_file
        self.server_name = server_name
        self._read_at = -TOKEN_REREAD

    def _current(self) -> str | None:
        if self.token_file is not None and time.monotonic() - self._read_at >= TOKEN_REREAD:
            self.token = self.token_file.read_text().strip()
            self._read_at = time.monotonic()
        return self.token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self._current()
        if token:
            request.headers["Authorization"] = f"Bearer {token}"
        if self.server_name:
            request.extensions["sni_hostname"] = self.server_name
        yield request


@dataclass(frozen=True)
class Target:
    """Where a kubeconfig points, and how to prove who we are."""

    server: str
    ssl_context: ssl.SSLContext
    token: str | None = None
    token_file: Path | None = None
    tls_server_name: str | None = None

    def client(self, timeout: float = 10.0) -> httpx.AsyncClient:
        auth = _Credentials(self.token, self.token_file, self.tls_server_name)
        return httpx.AsyncClient(
            base_url=self.server.rstrip("/"),
            verify=self.ssl_context,
            headers={"Accept": "application/json", "User-Agent": "dra-apiserver"},
            auth=auth,
            timeout=timeout,
        )


def in_cluster_target() -> Target:
    """The kube-apiserver of the cluster this process runs in, as its ServiceAccount."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host or not (IN_CLUSTER_DIR / "token").exists():
        raise KubeconfigError(
            "not running in a cluster (no KUBERNETES_SERVICE_HOST or ServiceAccount token):"
            " give --authentication-kubeconfig and --authorization-kubeconfig"
        )
    if ":" in host:
        host = f"[{host}]"
    return Target(
        server=f"https://{host}:{port}",
        ssl_context=ssl.create_default_context(cafile=str(IN_CLUSTER_DIR / "ca.crt")),
        token_file=IN_CLUSTER_DIR / "token",
    )


def _named(entries: list[dict[str, Any]] | None, name: str, what: str) -> dict[str, Any]:
    for entry in entries or []:
        if entry.get("name") == name:
            return dict(entry.get(what) or {})
    raise KubeconfigError(f"kubeconfig has no {what} named {name!r}")


def _data_or_file(section: dict[str, Any], key: str, base: Path) -> bytes | None:
    data = section.get(f"{key}-data")
    if data:
        return base64.b64decode(data)
    path = section.get(key)
    if path:
        return (base / str(path)).read_bytes()
    return None


def _client_context(cluster: dict[str, Any], user: dict[str, Any], base: Path) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if cluster.get("insecure-skip-tls-verify"):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        ca = _data_or_file(cluster, "certificate-authority", base)
        if ca is not None:
            context = ssl.create_default_context(cadata=ca.decode("ascii"))
    cert = _data_or_file(user, "client-certificate", base)
    key = _data_or_file(user, "client-key", base)
    if (cert is None) != (key is None):
        raise KubeconfigError(
            "kubeconfig user has a client certificate without a key, or a key without one"
        )
    if cert is not None and key is not None:
        # load_cert_chain reads files only; the material lives in a private temporary file
        # just long enough to be loaded.
        with tempfile.NamedTemporaryFile("wb") as f:
            f.write(cert + b"\n" + key)
            f.flush()
            context.load_cert_chain(f.name)
    return context


def load_kubeconfig(path: str | Path) -> Target:
    """The target of the kubeconfig's current context."""
    file = Path(path)
    try:
        config = yaml.safe_load(file.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"cannot read kubeconfig {file}: {exc}") from exc
    if not isinstance(config, dict):
        raise KubeconfigError(f"kubeconfig {file} is not a mapping")
    context_name = config.get("current-context")
    if not context_name:
        raise KubeconfigError(f"kubeconfig {file} has no current-context")
    context = _named(config.get("contexts"), context_name, "context")
    cluster = _named(config.get("clusters"), context.get("cluster", ""), "cluster")
    user = (
        _named(config.get("users"), context.get("user", ""), "user") if context.get("user") else {}
    )
    unsupported = sorted({"exec", "auth-provider", "username", "password"} & set(user))
    if unsupported:
        raise KubeconfigError(
            f"kubeconfig {file}: user {context.get('user')!r} uses {', '.join(unsupported)};"
            " only a token, tokenFile or client certificate is supported"
        )
    server = cluster.get("server")
    if not server:
        raise KubeconfigError(
            f"kubeconfig {file}: cluster {context.get('cluster')!r} has no server"
        )
    base = file.parent
    token_file = user.get("tokenFile")
    return Target(
        server=str(server),
        ssl_context=_client_context(cluster, user, base),
        token=user.get("token") or None,
        token_file=base / token_file if token_file and not user.get("token") else None,
        tls_server_name=cluster.get("tls-server-name"),
    )

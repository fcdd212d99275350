"""Where a Kubernetes API server is and how to prove who we are: a kubeconfig's current
context, or the Pod's ServiceAccount in a cluster.

Supported in a kubeconfig: the server URL, ``certificate-authority`` / ``-data``,
``insecure-skip-tls-verify``, ``tls-server-name``, and a bearer ``token`` / ``tokenFile`` or a
``client-certificate`` / ``-key`` (file or data). A user with ``exec``, ``auth-provider`` or a
password is refused when the file is read, not ignored. Relative file paths are relative to
the kubeconfig, as kubectl reads them.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
UNSUPPORTED_USER = frozenset({"exec", "auth-provider", "username", "password"})


class KubeconfigError(ValueError):
    """No usable configuration for the API server."""


@dataclass(frozen=True)
class ClusterConfig:
    """What a kubeconfig's context (or a Pod's ServiceAccount) gives: where, whom to trust,
    who we are."""

    server: str
    ca_pem: bytes | None = None
    token: str | None = None
    cert_pem: bytes | None = None
    key_pem: bytes | None = None
    token_file: Path | None = None
    """Read for the token, again every minute: a projected ServiceAccount token rotates."""
    insecure: bool = False
    """``insecure-skip-tls-verify``: the server's certificate is not checked."""
    tls_server_name: str | None = None
    """The name to ask for in the TLS handshake, when it is not the URL's host."""

    def with_server(self, server: str | None) -> ClusterConfig:
        """The same credentials for another URL (``--server``), or these when None."""
        return replace(self, server=server.rstrip("/")) if server else self


def in_cluster_config(
    server: str | None = None, *, directory: Path = IN_CLUSTER_DIR, hint: str = "pass --kubeconfig"
) -> ClusterConfig:
    """The kube-apiserver of the cluster this process runs in, as the Pod's ServiceAccount;
    ``hint`` says which flag to give instead, when this is no Pod."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not (server or host) or not (directory / "token").exists():
        raise KubeconfigError(
            f"not running in a cluster (no KUBERNETES_SERVICE_HOST or ServiceAccount token): {hint}"
        )
    if host and ":" in host:
        host = f"[{host}]"
    return ClusterConfig(
        server=(server or f"https://{host}:{port}").rstrip("/"),
        ca_pem=(directory / "ca.crt").read_bytes(),
        token_file=directory / "token",
    )


def config_for(
    kubeconfig: str | Path | None, *, hint: str, server: str | None = None
) -> ClusterConfig:
    """The kubeconfig's configuration if one is named, else the in-cluster one."""
    if kubeconfig:
        return load_kubeconfig(kubeconfig, server)
    return in_cluster_config(server, hint=hint)


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


def _read(file: Path) -> dict[str, Any]:
    try:
        config = yaml.safe_load(file.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"cannot read kubeconfig {file}: {exc}") from exc
    if not isinstance(config, dict):
        raise KubeconfigError(f"kubeconfig {file} is not a mapping")
    return config


def _context(config: dict[str, Any], file: Path) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The current context's cluster and user sections, and the cluster's name."""
    context_name = config.get("current-context")
    if not context_name:
        raise KubeconfigError(f"kubeconfig {file} has no current-context")
    context = _named(config.get("contexts"), context_name, "context")
    cluster = _named(config.get("clusters"), context.get("cluster", ""), "cluster")
    user_name = str(context.get("user") or "")
    user = _named(config.get("users"), user_name, "user") if user_name else {}
    unsupported = sorted(UNSUPPORTED_USER & set(user))
    if unsupported:
        raise KubeconfigError(
            f"kubeconfig {file}: user {user_name!r} uses {', '.join(unsupported)};"
            " only a token, tokenFile or client certificate is supported"
        )
    return cluster, user, str(context.get("cluster") or "")


def load_kubeconfig(path: str | Path, server: str | None = None) -> ClusterConfig:
    """The configuration of the kubeconfig's current context (``server`` instead of the
    cluster's URL, when given)."""
    file = Path(path)
    cluster, user, cluster_name = _context(_read(file), file)
    url = server or cluster.get("server")
    if not url:
        raise KubeconfigError(f"kubeconfig {file}: cluster {cluster_name!r} has no server")
    base = file.resolve().parent
    cert = _data_or_file(user, "client-certificate", base)
    key = _data_or_file(user, "client-key", base)
    if (cert is None) != (key is None):
        raise KubeconfigError(
            "kubeconfig user has a client certificate without a key, or a key without one"
        )
    token_file = user.get("tokenFile")
    insecure = bool(cluster.get("insecure-skip-tls-verify"))
    config = ClusterConfig(
        server=str(url).rstrip("/"),
        ca_pem=None if insecure else _data_or_file(cluster, "certificate-authority", base),
        token=user.get("token") or None,
        cert_pem=cert,
        key_pem=key,
        token_file=base / token_file if token_file and not user.get("token") else None,
        insecure=insecure,
        tls_server_name=cluster.get("tls-server-name"),
    )
    return config

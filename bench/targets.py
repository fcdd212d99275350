"""Servers under test, each a separate process over HTTPS on a free loopback port."""

from __future__ import annotations

import json
import ssl
import sys
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from apiserver.kubeclient import ClusterConfig, KubeClient, network
from devtools.apiserver import admin_token, serve_command
from devtools.process import ChildProcess, free_port, http_probe

REPO = Path(__file__).resolve().parents[1]


def async_client(
    url: str, context: ssl.SSLContext, headers: dict[str, str] | None = None, timeout: float = 120
) -> httpx.AsyncClient:
    """An async client over the HTTP stack this project's own clients use (the shim's, the
    controllers'), so that a benchmark playing kube-scheduler costs the shared cores what a
    client of ours would, not httpx's default stack (twice as dear per request)."""
    return httpx.AsyncClient(
        base_url=url,
        verify=context,
        headers=headers,
        timeout=timeout,
        transport=network(url, context),
    )


def kube_client(
    url: str,
    ca: Path,
    *,
    token: str | None = None,
    certificate: tuple[Path, Path] | None = None,
    timeout: float = 120,
) -> KubeClient:
    """This project's own client (``kubeclient``), for a benchmark's measured calls: the
    process playing kube-scheduler then spends on each what a client of ours would.
    ``certificate``: the client certificate and key files to present."""
    cert, key = certificate if certificate is not None else (None, None)
    config = ClusterConfig(
        url,
        ca.read_bytes(),
        token,
        cert.read_bytes() if cert is not None else None,
        key.read_bytes() if key is not None else None,
    )
    return KubeClient(config, timeout=timeout, user_agent="dra-bench")


@dataclass
class Target:
    """A server process: how to start it, where it listens, how to stop it."""

    name: str
    workdir: Path
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self.process = ChildProcess(self.name, self.log, cwd=REPO)

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
        self.process.start(
            self.command(), http_probe(f"{self.url}/readyz", self.ssl_context), timeout
        )

    def stop(self) -> None:
        self.process.stop()

    @property
    def pid(self) -> int:
        return self.process.pid

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, verify=self.ssl_context(), headers=self.headers, timeout=30.0
        )


@dataclass
class APIServerTarget(Target):
    """This server, started as ``make run`` starts it, on an SQLite file in the work dir;
    ``extra`` flags go after the usual ones."""

    extra: list[str] = field(default_factory=list)

    def command(self) -> list[str]:
        return serve_command(self.workdir, self.port, extra=self.extra)

    @property
    def token(self) -> str:
        return admin_token(self.workdir)

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

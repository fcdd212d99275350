"""Start the real server as a separate process over HTTPS, and drive it with kubectl and httpx."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from apiserver.server.kubeconfig import write_kubeconfig
from devtools.apiserver import admin_token, serve_command
from devtools.kubectls import venv_kubectl
from devtools.process import START_TIMEOUT, ChildProcess, free_port, http_probe

REPO = Path(__file__).resolve().parents[2]


def kubectl_binary() -> str:
    """The kubectl of the dev lock (the newest release the tests run)."""
    return str(venv_kubectl())


@dataclass
class ServerProcess:
    """A running server process and everything needed to talk to it."""

    workdir: Path
    port: int
    extra_args: list[str] = field(default_factory=list)
    storage: str | None = None  # a --storage URL; by default an SQLite file in workdir
    launcher: list[str] = field(default_factory=list)
    """What the server is started through (the server's command line follows it, and it
    execs that): a parent with its own signal dispositions, say."""

    def __post_init__(self) -> None:
        self.process = ChildProcess("server", self.log, cwd=REPO)

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
        return admin_token(self.workdir)

    def start(self, timeout: float = START_TIMEOUT) -> ServerProcess:
        args = self.launcher + serve_command(
            self.workdir,
            self.port,
            self.storage,
            [
                # Most tests own the status of their patches; a test that wants the server to
                # write it (and its Events) passes --patch-status, which wins as the later flag.
                "--no-patch-status",
                # Likewise for pool status requests (their status, their cleanup, and the
                # per-user creation limit): --pool-status and a rate turn them back on.
                "--no-pool-status",
                "--pool-status-create-rate",
                "0",
                *self.extra_args,
            ],
        )
        self.process.start(args, http_probe(f"{self.url}/readyz", self.ssl_context), timeout)
        return self

    def stop(self) -> None:
        self.process.stop()

    def kill9(self) -> None:
        assert self.process.running
        self.process.kill()

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
    workdir: Path,
    extra_args: list[str] | None = None,
    storage: str | None = None,
    launcher: list[str] | None = None,
) -> ServerProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    return ServerProcess(
        workdir, free_port(), list(extra_args or []), storage=storage, launcher=list(launcher or [])
    ).start()


def module_server(name: str, extra_args: list[str] | None = None) -> Any:
    """A module-scoped fixture starting a server of the module's own (its work directory
    named ``name``) with ``extra_args``, stopped after the module: assign it to the
    fixture's name in the test module (``own_server = module_server("bad-input")``)."""

    @pytest.fixture(scope="module")
    def fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
        proc = start_server(tmp_path_factory.mktemp(name), extra_args)
        yield proc
        proc.stop()

    return fixture


@dataclass
class ShimProcess:
    """The scheduler shim as a separate process, talking to ``server`` with its kubeconfig;
    its self-signed serving certificate and CA are made in ``workdir``."""

    server: ServerProcess
    workdir: Path
    port: int
    extra_args: list[str] = field(default_factory=list)
    kubeconfig: Path | None = None
    """Whose credentials the shim uses: the server's admin kubeconfig by default."""

    def __post_init__(self) -> None:
        self.process = ChildProcess("shim", self.workdir / "shim.log", cwd=REPO)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.workdir / "certs" / "ca.crt"))

    def start(self, timeout: float = START_TIMEOUT) -> ShimProcess:
        command = [
            sys.executable,
            "-m",
            "apiserver",
            "shim",
            "--kubeconfig",
            str(self.kubeconfig or self.server.kubeconfig),
            "--server",
            self.server.url,
            "--bind-address",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--cert-dir",
            str(self.workdir / "certs"),
            "--log-level",
            "warning",
            *self.extra_args,
        ]
        self.process.start(command, http_probe(f"{self.url}/healthz", self.ssl_context), timeout)
        return self

    def stop(self) -> None:
        self.process.stop()

    @property
    def scheduler_cert(self) -> tuple[Path, Path]:
        """The client certificate and key the shim makes for the scheduler beside its CA."""
        certs = self.workdir / "certs"
        return certs / "scheduler.crt", certs / "scheduler.key"

    def client(self, cert: tuple[Path, Path] | None = None, **kwargs: Any) -> httpx.Client:
        """What kube-scheduler is to the shim: an HTTPS client that trusts its CA and
        presents the scheduler's client certificate (or ``cert``)."""
        context = self.ssl_context()
        chosen = cert or self.scheduler_cert
        context.load_cert_chain(*chosen)
        return httpx.Client(base_url=self.url, verify=context, timeout=60.0, **kwargs)

    def anonymous_client(self, **kwargs: Any) -> httpx.Client:
        """An HTTPS client that trusts the shim's CA and presents no certificate."""
        return httpx.Client(base_url=self.url, verify=self.ssl_context(), timeout=60.0, **kwargs)


def start_shim(
    server: ServerProcess,
    workdir: Path,
    extra_args: list[str] | None = None,
    kubeconfig: Path | None = None,
) -> ShimProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    return ShimProcess(server, workdir, free_port(), list(extra_args or []), kubeconfig).start()


def start_shim_as(
    server: ServerProcess,
    workdir: Path,
    user: str,
    token: str,
    extra_args: list[str] | None = None,
) -> ShimProcess:
    """The shim with its API client signed in to ``server`` as ``user`` by ``token`` (a
    kubeconfig written into ``workdir``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = workdir / "kubeconfig"
    write_kubeconfig(kubeconfig, server.url, server.ca, token, user=user)
    return start_shim(server, workdir, extra_args, kubeconfig=kubeconfig)


def shim_binding(user: str) -> str:
    """A ClusterRoleBinding that gives ``user`` the shim's ClusterRole, as YAML."""
    return f"""\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: scheduler-shim
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: dra-scheduler-shim}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: {user}}}]
"""


def _logged(process: ChildProcess, line: str) -> Callable[[], bool]:
    """Ready once ``line`` is logged one more time than it was before the start (the log is
    kept across restarts)."""
    before = process.output().count(line)
    return lambda: process.output().count(line) > before


@dataclass
class SchedulerProcess:
    """``python -m apiserver schedule``: the stand-in for kube-scheduler, placing pods
    through ``shim``."""

    shim: ShimProcess
    workdir: Path
    extra_args: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.process = ChildProcess("scheduler", self.workdir / "scheduler.log", cwd=REPO)

    def start(self, timeout: float = START_TIMEOUT) -> SchedulerProcess:
        server = self.shim.server
        command = [
            sys.executable,
            "-m",
            "apiserver",
            "schedule",
            "--kubeconfig",
            str(server.kubeconfig),
            "--shim-url",
            self.shim.url,
            "--shim-ca-file",
            str(self.shim.workdir / "certs" / "ca.crt"),
            "--shim-client-cert-file",
            str(self.shim.scheduler_cert[0]),
            "--shim-client-key-file",
            str(self.shim.scheduler_cert[1]),
            *self.extra_args,
        ]
        self.process.start(command, _logged(self.process, "watching pods"), timeout)
        return self

    def stop(self) -> None:
        self.process.stop()


CONTROLLER = REPO / "examples" / "composable-controller" / "controller.py"


@dataclass
class ControllerProcess:
    """The example composable controller (examples/composable-controller) for one driver."""

    server: ServerProcess
    log: Path
    args: list[str]

    def __post_init__(self) -> None:
        self.process = ChildProcess("controller", self.log, cwd=REPO)

    def start(self, timeout: float = START_TIMEOUT) -> ControllerProcess:
        command = [
            sys.executable,
            str(CONTROLLER),
            "--kubeconfig",
            str(self.server.kubeconfig),
            *self.args,
        ]
        self.process.start(command, _logged(self.process, "watching ResourceClaims"), timeout)
        return self

    def stop(self) -> None:
        self.process.stop()

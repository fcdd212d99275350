"""A child process for tests and benchmarks: start a command with its output going to a log
file, wait until a probe says it is ready, and stop it (SIGTERM, then SIGKILL after a grace)
or kill it outright (SIGKILL, for durability tests).

The log's text goes into every failure message, so a process that dies or never becomes
ready explains itself.
"""

from __future__ import annotations

import signal
import socket
import ssl
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx

from .waiting import WaitTimeout, wait_for

START_TIMEOUT = 120.0
"""How long a start may take before it counts as failed: a Python server imports for a few
seconds of CPU, and a loaded two-core machine running the suite on several workers starts
several at once. A process that serves returns as soon as it does."""

Probe = Callable[[], bool]
"""True once the process serves; may be called before the process has written anything."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_probe(
    url: str,
    verify: Callable[[], ssl.SSLContext | bool] = lambda: True,
    healthy: Callable[[httpx.Response], bool] = lambda r: r.status_code == 200,
) -> Probe:
    """A GET of ``url`` that answers ``healthy``. ``verify`` is called on each try: a
    server that writes its own CA at start has none to trust until then."""

    def probe() -> bool:
        try:
            return healthy(httpx.get(url, verify=verify(), timeout=1))
        except (httpx.HTTPError, ValueError, OSError):  # OSError: no CA file yet
            return False

    return probe


class ChildProcess:
    """One command at a time, restartable; ``log`` collects its stdout and stderr."""

    def __init__(self, name: str, log: Path, cwd: Path | None = None) -> None:
        self.name = name
        self.log = log
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int:
        """The running command's process id (for reading its CPU time or memory)."""
        if self.proc is None:
            raise RuntimeError(f"{self.name} is not running")
        return self.proc.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def start(self, command: list[str], ready: Probe, timeout: float = START_TIMEOUT) -> None:
        """Run ``command`` and return once ``ready()``; RuntimeError with the log if it
        exits first or is not ready within ``timeout`` (it is killed then)."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                command,
                cwd=self.cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        proc = self.proc

        def up() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {proc.returncode}:\n{self.output()}")
            return ready()

        try:
            wait_for(up, f"{self.name} to be ready", timeout=timeout)
        except WaitTimeout:
            self.kill()
            raise RuntimeError(
                f"{self.name} not ready after {timeout}s:\n{self.output()}"
            ) from None

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM, and SIGKILL if it has not exited after ``grace`` seconds."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL, as a crash would end it: nothing gets to flush or clean up."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

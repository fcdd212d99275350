"""The README's shell blocks, and what running them as a reader would takes: the server
flags of ``make run``, and a terminal running one block in bash in the background.

A terminal is its own process group, so stopping it stops what its bash started too (a
command in the foreground of a bash that is killed would otherwise live on)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from pathlib import Path

from .harness import REPO

MAKE_RUN_FLAGS = ["--pool-status", "--patch-status", "--pool-status-create-rate", "0.2"]
"""What ``make run`` leaves at the server's defaults and the test harness turns off."""


def sh_blocks(heading: str) -> list[str]:
    """The ``sh`` code blocks between ``heading`` and the next heading of the README."""
    readme = (REPO / "README.md").read_text()
    start = readme.index(heading) + len(heading)
    end = readme.find("\n## ", start)
    section = readme[start : end if end != -1 else None]
    return re.findall(r"^```sh\n(.*?)^```$", section, flags=re.DOTALL | re.MULTILINE)


def commands(block: str) -> list[str]:
    """A block's command lines, a line ending in a backslash joined with the next, as the
    shell reads them."""
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


class Terminal:
    """``script`` in a bash of its own in ``cwd``, its output in ``log``, until stopped."""

    def __init__(self, script: str, cwd: Path, env: dict[str, str], log: Path) -> None:
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                ["bash", "-c", script],
                cwd=cwd,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def running(self) -> bool:
        """Whether bash still runs; if it ended, AssertionError with what it printed."""
        if self.proc.poll() is None:
            return True
        raise AssertionError(f"exited with {self.proc.returncode}:\n{self.output()}")

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM to the whole group; SIGKILL to what is left of it once bash has ended, or
        after ``grace``."""
        group = self.proc.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
        self.proc.wait()

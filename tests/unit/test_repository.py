"""What the repository tracks: no generated output (certificates, keys, tokens, kubeconfigs,
store files) is committed; .gitignore names them, and nothing it names is tracked."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_nothing_the_gitignore_names_is_tracked() -> None:
    tracked_but_ignored = subprocess.run(
        ["git", "ls-files", "--cached", "--ignored", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert tracked_but_ignored == []

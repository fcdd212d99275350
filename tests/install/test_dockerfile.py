"""docker/Dockerfile, checked without a container engine: hadolint's rules, and what the
image must be (pinned base, the project installed as a wheel, no build tools and no root in
the final stage)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.e2e.harness import REPO

DOCKERFILE = REPO / "docker" / "Dockerfile"


def hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    binary = Path(sys.executable).parent / "hadolint"
    return subprocess.run(
        [str(binary), "--no-color", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_hadolint_passes() -> None:
    result = hadolint(DOCKERFILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_refuses_what_it_should(tmp_path: Path) -> None:
    """The check above can fail: an unpinned base and an unpinned, cached pip install."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install fastapi\n")
    result = hadolint(bad)
    assert result.returncode != 0
    assert "DL3007" in result.stdout  # latest
    assert "DL3013" in result.stdout  # unpinned pip package


def stages(text: str) -> list[str]:
    return re.split(r"^(?=FROM )", text, flags=re.M)[1:]


def test_final_stage_is_slim_pinned_non_root_and_holds_the_wheel_only() -> None:
    text = DOCKERFILE.read_text()
    [base] = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.M)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+", base)
    build, final = stages(text)
    assert "pip wheel" in build
    assert "pip install --no-cache-dir --require-hashes -r requirements.lock" in build
    assert "pip install --no-cache-dir --no-deps /wheels/" in build
    assert "COPY --from=build /opt/venv /opt/venv" in final
    assert "pip uninstall --yes" in final
    assert "setuptools wheel" in final
    assert "COPY apiserver" not in final  # only the installed wheel, not the sources
    [user] = re.findall(r"^USER (\S+)$", final, re.M)
    assert user.split(":")[0] not in ("0", "root")
    assert re.search(r'^ENTRYPOINT \["dra-apiserver"\]$', final, re.M)
    project = (REPO / "pyproject.toml").read_text()
    assert 'dra-apiserver = "apiserver.cli:main"' in project  # the entry point it runs

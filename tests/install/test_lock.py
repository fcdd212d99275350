"""The lock files: what a fresh ``make test`` or image build installs is exactly what they
name, and they agree with pyproject.toml.

``requirements.lock`` holds the runtime requirements (the image installs it);
``requirements-dev.lock`` holds those same pins plus the test tools and the build backend
(``make run`` and ``make test`` install it). ``make lock`` writes both."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.e2e.harness import REPO

RUNTIME_LOCK = REPO / "requirements.lock"
DEV_LOCK = REPO / "requirements-dev.lock"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def read_lock(path: Path) -> dict[str, tuple[str, int]]:
    """Each locked package's canonical name -> (version, how many hashes it carries)."""
    pins: dict[str, tuple[str, int]] = {}
    name = ""
    for line in path.read_text().splitlines():
        if match := _PIN.match(line):
            name = canonicalize_name(match.group(1))
            pins[name] = (match.group(2), 0)
        elif line.strip().startswith("--hash=sha256:") and name:
            version, hashes = pins[name]
            pins[name] = (version, hashes + 1)
    return pins


def project_requirements() -> tuple[list[Requirement], list[Requirement]]:
    """(runtime, dev and build) requirements as pyproject.toml states them."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    runtime = [Requirement(r) for r in project["project"]["dependencies"]]
    dev = [Requirement(r) for r in project["project"]["optional-dependencies"]["dev"]]
    build = [Requirement(r) for r in project["build-system"]["requires"]]
    return runtime, dev + build


def disagreements(requirements: list[Requirement], lock: dict[str, tuple[str, int]]) -> list[str]:
    """What in ``requirements`` the lock does not satisfy, one line each."""
    found = []
    for requirement in requirements:
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        pinned = lock.get(canonicalize_name(requirement.name))
        if pinned is None:
            found.append(f"{requirement}: not in the lock")
        elif not requirement.specifier.contains(pinned[0], prereleases=True):
            found.append(f"{requirement}: the lock pins {pinned[0]}")
    return found


def test_the_runtime_lock_satisfies_pyprojects_dependencies() -> None:
    runtime, _ = project_requirements()
    assert disagreements(runtime, read_lock(RUNTIME_LOCK)) == []


def test_the_dev_lock_satisfies_every_requirement_and_keeps_the_runtime_pins() -> None:
    runtime, dev = project_requirements()
    dev_lock = read_lock(DEV_LOCK)
    assert disagreements(runtime + dev, dev_lock) == []
    differing = {
        name: (version, dev_lock.get(name, ("missing", 0))[0])
        for name, (version, _) in read_lock(RUNTIME_LOCK).items()
        if dev_lock.get(name, ("missing", 0))[0] != version
    }
    assert differing == {}


@pytest.mark.parametrize("lock", [RUNTIME_LOCK, DEV_LOCK], ids=lambda p: p.name)
def test_every_pin_carries_hashes(lock: Path) -> None:
    pins = read_lock(lock)
    assert len(pins) > 10
    assert [name for name, (_, hashes) in pins.items() if hashes == 0] == []


def test_a_requirement_the_lock_does_not_satisfy_is_found() -> None:
    """The checks above can fail: a too-old pin, a missing package."""
    lock = {"pyyaml": ("5.4", 2)}
    found = disagreements([Requirement("PyYAML>=6.0"), Requirement("orjson>=3.10")], lock)
    assert found == ["PyYAML>=6.0: the lock pins 5.4", "orjson>=3.10: not in the lock"]


def test_this_environment_was_installed_from_the_dev_lock() -> None:
    """What the tests run against is what the lock names, not what a registry served."""
    installed = {
        canonicalize_name(dist.metadata["Name"]): dist.version for dist in metadata.distributions()
    }
    wrong = {
        name: (version, installed.get(name))
        for name, (version, _) in read_lock(DEV_LOCK).items()
        if name in installed and installed[name] != version
    }
    assert wrong == {}
    runtime, _ = project_requirements()
    assert [r.name for r in runtime if canonicalize_name(r.name) not in installed] == []

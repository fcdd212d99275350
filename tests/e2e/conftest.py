"""Fixtures that start the real server process (HTTPS, generated certificates, SQLite)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import ServerProcess, start_server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server shared by tests that only add objects under names of their own."""
    proc = start_server(tmp_path_factory.mktemp("server"), ["--bookmark-interval", "1"])
    yield proc
    proc.stop()


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server of this test's own, for tests that restart, kill or count everything."""
    proc = start_server(tmp_path / "server", ["--bookmark-interval", "1"])
    yield proc
    proc.stop()

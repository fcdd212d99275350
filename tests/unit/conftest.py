"""Fixtures shared by the unit tests: a real SQLite store in the test's own directory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from apiserver.storage.sqlite import SQLiteStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    """A started store on a fresh file, closed after the test."""
    s = SQLiteStore(tmp_path / "store.db")
    await s.start()
    try:
        yield s
    finally:
        await s.close()

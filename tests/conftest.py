"""Fixtures for every test directory: one real etcd for the whole session, started on demand."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devtools.localetcd import LocalEtcd


@pytest.fixture(scope="session")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEtcd]:
    """A single-member etcd on loopback with a temporary data dir, fsync off (no test that
    uses it checks durability); tests keep apart by key prefix."""
    server = LocalEtcd(tmp_path_factory.mktemp("etcd") / "data", fast=True).start()
    yield server
    server.stop()

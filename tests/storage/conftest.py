"""The storage backends every conformance test runs against.

``sqlite`` and ``etcd`` are the stores themselves; ``+cache`` puts the watch cache in
front. etcd tests share one session etcd, each under a key prefix of its own.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from apiserver.storage import Store
from apiserver.storage.cacher import WatchCache
from apiserver.storage.etcd import EtcdConfig, EtcdStore
from apiserver.storage.sqlite import SQLiteStore
from devtools.localetcd import LocalEtcd

BACKENDS = ["sqlite", "etcd", "sqlite+cache", "etcd+cache"]
_prefixes = itertools.count()


def etcd_store(server: LocalEtcd, prefix: str, **options: float) -> EtcdStore:
    config = EtcdConfig.from_url(
        server.url, prefix=prefix, compaction_interval=0, request_timeout=5.0, **options
    )
    return EtcdStore(config)


def unique_prefix() -> str:
    return f"/test-{next(_prefixes)}"


@pytest.fixture
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., Store]:
    """Builds an unstarted store of the backend under test (``window`` sizes the cache)."""
    name: str = request.param

    def build(window: int = 10_000) -> Store:
        backend: Store
        if name.startswith("etcd"):
            backend = etcd_store(request.getfixturevalue("etcd"), unique_prefix())
        else:
            backend = SQLiteStore(tmp_path / f"store-{next(_prefixes)}.db")
        if name.endswith("+cache"):
            return WatchCache(backend, window=window)
        return backend

    return build


@pytest.fixture
async def store(make_store: Callable[..., Store]) -> AsyncIterator[Store]:
    s = make_store()
    await s.start()
    try:
        yield s
    finally:
        await s.close()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "make_store" in metafunc.fixturenames:
        metafunc.parametrize("make_store", BACKENDS, indirect=True)

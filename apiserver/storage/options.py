"""The storage flags (``--storage``, ``--etcd-*``, the watch cache's) and the store they open.

``open_store`` turns a storage URL into a backend — ``sqlite:///relative/path``,
``sqlite:////absolute/path``, ``sqlite://:memory:`` or ``etcd://HOST:PORT[,HOST:PORT...]``
(``etcds://`` with TLS) — with the watch cache in front of the given key prefixes unless
``--no-watch-cache``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..toolkit.options import nested, non_negative, option, positive, toggle
from .cacher import WatchCache
from .etcd import EtcdConfig, EtcdStore
from .fanout import STALL_TIMEOUT
from .interface import Store
from .sqlite import SQLiteStore
from .window import WATCH_WINDOW

MIB = 1024 * 1024


@dataclass
class StorageOptions:
    storage: str = option(
        "--storage",
        "sqlite:///data/apiserver.db",
        "storage URL: sqlite:///relative/path, sqlite:////absolute/path or"
        " etcd://HOST:PORT[,HOST:PORT...]",
    )
    watch_cache: bool = toggle(
        "--watch-cache",
        True,
        "serve watches, gets and lists from an in-memory cache of each kind",
    )
    watch_history: int = option(
        "--watch-history",
        WATCH_WINDOW,
        "revisions of history kept for watches (SQLite), events kept per kind (watch cache)",
        check=positive,
    )
    watch_history_mib: int = option(
        "--watch-history-mib",
        64,
        "most MiB the events kept in memory for watches may take, per kind (watch cache"
        " and Device view; their JSON bytes); 0 for no bound but --watch-history",
        check=non_negative,
    )
    watch_stall_timeout: float = option(
        "--watch-stall-timeout",
        STALL_TIMEOUT,
        "seconds a watcher's buffer of unsent events may stay full before the watcher"
        " is closed, logged and counted in apiserver_terminated_watchers_total, as"
        " kube-apiserver's watch cache does",
        check=non_negative,
    )
    etcd: EtcdConfig = nested(EtcdConfig)

    @property
    def window_bytes(self) -> int:
        """``--watch-history-mib`` in bytes: the bound of every in-memory event window."""
        return self.watch_history_mib * MIB


def open_backend(options: StorageOptions) -> Store:
    """The store the URL names, without a cache in front."""
    url = options.storage
    if url.startswith("sqlite://"):
        path = url[len("sqlite://") :]
        if path.startswith("/"):
            path = path[1:]
        if not path:
            raise ValueError("sqlite storage needs a path, e.g. sqlite:///data/apiserver.db")
        return SQLiteStore(path, history=options.watch_history)
    if url.startswith(("etcd://", "etcds://")):
        return EtcdStore(options.etcd.with_url(url))
    raise ValueError(
        f"unsupported storage URL {url!r}; expected sqlite:///PATH or etcd://HOST:PORT[,HOST:PORT]"
    )


def open_store(options: StorageOptions, cached: Sequence[str]) -> Store:
    """The store, behind a watch cache of the key prefixes ``cached`` unless it is off."""
    store = open_backend(options)
    if not options.watch_cache:
        return store
    return WatchCache(
        store,
        prefixes=list(cached),
        window=options.watch_history,
        window_bytes=options.window_bytes,
        stall_timeout=options.watch_stall_timeout,
    )

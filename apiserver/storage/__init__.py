"""Storage: one ``Store`` protocol (revisioned key-value of JSON objects) and its backends."""

from .errors import (
    KeyExistsError,
    KeyNotFoundError,
    PreconditionFailedError,
    RevisionCompactedError,
    StorageError,
    StorageUnavailableError,
)
from .interface import (
    EventType,
    ListPage,
    ReadableStore,
    Store,
    StoredObject,
    Watch,
    WatchEvent,
    prefix_end,
)

__all__ = [
    "EventType",
    "KeyExistsError",
    "KeyNotFoundError",
    "ListPage",
    "PreconditionFailedError",
    "ReadableStore",
    "RevisionCompactedError",
    "StorageError",
    "StorageUnavailableError",
    "Store",
    "StoredObject",
    "Watch",
    "WatchEvent",
    "prefix_end",
]

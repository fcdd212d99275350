"""Errors a Store raises. The machinery maps each onto a Kubernetes Status in one place."""

from __future__ import annotations


class StorageError(Exception):
    """Base of every storage failure."""

    def __init__(self, key: str, message: str = "") -> None:
        super().__init__(message or key)
        self.key = key


class KeyExistsError(StorageError):
    """Create found the key already present."""


class KeyNotFoundError(StorageError):
    """The key does not exist (at the requested revision)."""


class PreconditionFailedError(StorageError):
    """Update or delete expected another revision of the object."""

    def __init__(self, key: str, expected: int, actual: int) -> None:
        super().__init__(key, f"{key}: expected revision {expected}, found {actual}")
        self.expected = expected
        self.actual = actual


class RevisionCompactedError(StorageError):
    """The requested revision is older than the history the store keeps."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__("", f"too old resource version: {requested} ({compacted})")
        self.requested = requested
        self.compacted = compacted


class StorageUnavailableError(StorageError):
    """The backend cannot be reached or has failed; the request may be retried."""

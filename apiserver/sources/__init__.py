"""Sources: list+watch informers of the objects the device view and controllers read.

One interface (``Source``), three implementations: ``StoreSource`` over our own store
(standalone mode), ``KubeSource`` over a kube-apiserver through the client layer (raw JSON,
so fields this server does not know survive), and ``MemorySource`` whose objects the caller
sets (tests, benchmarks).
"""

from ..toolkit import JSON, Backoff
from .informer import Informer
from .interface import Handler, Source, SourceEvent, object_key, object_revision
from .kube import KubeSource
from .memory import MemorySource, RevisionClock
from .store import StoreSource

__all__ = [
    "JSON",
    "Backoff",
    "Handler",
    "Informer",
    "KubeSource",
    "MemorySource",
    "RevisionClock",
    "Source",
    "SourceEvent",
    "StoreSource",
    "object_key",
    "object_revision",
]

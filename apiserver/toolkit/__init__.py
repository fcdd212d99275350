"""The small primitives every loop of the server shares: backoff, rate limits, work queues
and worker loops, and the one list-then-watch loop (the reflector) that the watch cache, the
sources and the client layer's ``ListWatch`` all run; and ``options``, where a concern's
command-line flags are declared once, as fields of its options dataclass."""

from .backoff import Backoff
from .jsonobject import JSON, json_copy
from .mediatypes import MERGE_PATCH
from .ratelimit import TokenBucket
from .reflector import Reflector
from .workqueue import CoalescingQueue, run_sweeps, run_worker

__all__ = [
    "JSON",
    "MERGE_PATCH",
    "Backoff",
    "CoalescingQueue",
    "Reflector",
    "TokenBucket",
    "json_copy",
    "run_sweeps",
    "run_worker",
]

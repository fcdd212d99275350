"""The small primitives every loop of the server shares: backoff, rate limits, work queues
and worker loops, and the one list-then-watch loop (the reflector) that the watch cache and
the sources both run; and ``options``, where a concern's command-line flags are declared
once, as fields of its options dataclass."""

from .backoff import Backoff
from .jsonobject import JSON
from .ratelimit import TokenBucket
from .reflector import Reflector
from .workqueue import CoalescingQueue, run_sweeps, run_worker

__all__ = [
    "JSON",
    "Backoff",
    "CoalescingQueue",
    "Reflector",
    "TokenBucket",
    "run_sweeps",
    "run_worker",
]

"""What the shim counts, in a Prometheus registry of its own that its ``/metrics`` serves:
the extender calls kube-scheduler makes (by verb and outcome, with their latency) and the
KEP-5007 attach waits of its binds (started; attached, failed, timed out or cancelled;
with how long each waited), and the collections of Python's collector (``python_gc_*``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Counter, GCCollector, Histogram

PREFIX = "dra_scheduler_shim"
CALL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Filter and prioritize answer in milliseconds; a bind that waits for attaching in minutes
(it lands in +Inf beyond 30 s; the attach wait histogram has the detail)."""
WAIT_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0)
"""Attaching a fabric device takes seconds to minutes; the default timeout is 600 s."""

OK, ERROR, BAD_REQUEST = "ok", "error", "bad_request"
ATTACHED, FAILED, TIMED_OUT, CANCELLED = "attached", "failed", "timed_out", "cancelled"


class ShimMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        GCCollector(registry=self.registry)
        self.calls = Counter(
            f"{PREFIX}_extender_requests",
            "Extender calls by verb (filter, prioritize, bind) and outcome: ok, error (the"
            " answer carries an Error), bad_request (not what the scheduler sends).",
            ["verb", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            f"{PREFIX}_extender_request_duration_seconds",
            "Time to answer an extender call, by verb.",
            ["verb"],
            buckets=CALL_BUCKETS,
            registry=self.registry,
        )
        self.waits_started = Counter(
            f"{PREFIX}_attach_waits_started",
            "Binds that began waiting for fabric devices to be attached.",
            registry=self.registry,
        )
        self.waits = Counter(
            f"{PREFIX}_attach_waits",
            "Attach waits that ended, by outcome: attached, failed (an attach failure"
            " condition, the claim deleted, or the API server failing), timed_out, cancelled.",
            ["outcome"],
            registry=self.registry,
        )
        self.wait_duration = Histogram(
            f"{PREFIX}_attach_wait_duration_seconds",
            "How long attach waits lasted, by outcome.",
            ["outcome"],
            buckets=WAIT_BUCKETS,
            registry=self.registry,
        )

    def call(self, verb: str, outcome: str, seconds: float) -> None:
        self.calls.labels(verb, outcome).inc()
        self.latency.labels(verb).observe(seconds)

    @contextmanager
    def attach_wait(self) -> Iterator[None]:
        """Counts the wait it wraps: ending normally is attached, ``TimeoutError`` timed
        out, cancellation cancelled, any other exception failed."""
        self.waits_started.inc()
        began = time.monotonic()
        outcome = FAILED
        try:
            yield
            outcome = ATTACHED
        except TimeoutError:
            outcome = TIMED_OUT
            raise
        except asyncio.CancelledError:
            outcome = CANCELLED
            raise
        finally:
            self.waits.labels(outcome).inc()
            self.wait_duration.labels(outcome).observe(time.monotonic() - began)

"""The ResourcePoolStatusRequest controller (KEP-5677): each request answered exactly once.

A request without ``status.observationTime`` is queued (a rate-limited work queue: keys
coalesce, a token bucket bounds the rate). Processing it:

1. waits (briefly) until the device view has committed what its sources have seen;
2. asks the ``PoolIndex`` for the summaries of the driver's pools (or the one pool named),
   sorted by pool name;
3. if a pool is incomplete (fewer slices than ``resourceSliceCount``), tries again a few
   times after a delay — a driver may be publishing — before answering with what is there;
4. writes the status through the status subresource: ``observationTime``, the first
   ``spec.limit`` pools, ``truncated``, ``totalMatchingPools``, at most 10 validation errors
   (the tenth says how many more there were) and condition ``Complete=True`` with reason
   ``CalculationComplete``. No claim names, namespaces or pod data: only counts.

Exactly once, across replicas: the write is an update of the status carrying the
resourceVersion the request was read at. A conflict (409) means someone wrote in between:
the request is read again, and if it now has an ``observationTime`` another replica answered
it and this one stops; otherwise (a label changed, say) the status is written again on the
new version.

When it cannot answer: a computation that raises is retried with exponential backoff and
after ``error_retries`` attempts answered with ``Failed=True``, reason ``CalculationFailed``;
a status the server refuses (4xx other than 404 and 409, or an internal error through
``error_retries`` attempts, e.g. etcd finding it too large) is replaced by ``Failed=True``,
reason ``StatusRejected``. Both set ``observationTime``: the request is done either way. An
unavailable store (503, 504) is waited out, with the same backoff.

Metrics (the KEP's names): ``resourcepoolstatus_request_processing_duration_seconds`` (from
the moment this replica queued the request to its status write: queue wait, retries and
computation), ``resourcepoolstatus_requests_processed_total`` (statuses this replica wrote,
Complete or Failed) and ``resourcepoolstatus_request_processing_errors_total`` (attempts
that failed, and Failed answers).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Histogram

from ..api import CONDITION_MESSAGE_WRITTEN_MAX as MESSAGE_MAX
from ..api.resource import LIMIT_DEFAULT, VALIDATION_ERRORS_MAX
from ..machinery import Registry, StatusSubresource, WriteOptions, errors
from ..pools import PoolIndex, PoolSummary, clip
from ..sources import Source, SourceEvent, object_revision
from ..storage import EventType
from ..tasks import BackgroundTask
from ..toolkit import JSON, CoalescingQueue, TokenBucket, run_worker
from ..toolkit.timestamps import now_rfc3339

log = logging.getLogger("apiserver.controllers.poolstatus")

COMPLETE, CALCULATION_COMPLETE = "Complete", "CalculationComplete"
FAILED, CALCULATION_FAILED, STATUS_REJECTED = "Failed", "CalculationFailed", "StatusRejected"
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


def is_processed(obj: JSON) -> bool:
    """Whether a request has been answered (``status.observationTime`` is set)."""
    return bool((obj.get("status") or {}).get("observationTime"))


def _condition(kind: str, reason: str, message: str, now: str, generation: int) -> JSON:
    return {
        "type": kind,
        "status": "True",
        "observedGeneration": generation,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message[:MESSAGE_MAX],
    }


def validation_errors(summaries: list[PoolSummary]) -> list[str]:
    """The pools' problems in pool order, at most ``VALIDATION_ERRORS_MAX``; when there are
    more, the last entry says how many were left out."""
    found = [e for s in summaries for e in s.errors]
    if len(found) <= VALIDATION_ERRORS_MAX:
        return found
    kept = found[: VALIDATION_ERRORS_MAX - 1]
    return [*kept, f"{len(found) - len(kept)} more validation errors are not shown"]


def request_status(summaries: list[PoolSummary], limit: int, now: str, generation: int = 1) -> JSON:
    """The answer to a request whose matching pools are ``summaries`` (sorted)."""
    total = len(summaries)
    message = f"Processed {total} pool{'' if total == 1 else 's'}"
    if total > limit:
        message += f"; the first {limit} are listed"
    status: JSON = {"observationTime": now}
    if summaries:
        status["pools"] = [s.entry() for s in summaries[:limit]]
    status["conditions"] = [_condition(COMPLETE, CALCULATION_COMPLETE, message, now, generation)]
    problems = validation_errors(summaries)
    if problems:
        status["validationErrors"] = problems
    status["truncated"] = total > limit
    status["totalMatchingPools"] = total
    return status


def failed_status(reason: str, message: str, now: str, generation: int = 1) -> JSON:
    return {
        "observationTime": now,
        "conditions": [_condition(FAILED, reason, message, now, generation)],
    }


class PoolStatusMetrics:
    """The KEP's three metrics, registered in ``registry`` (the one /metrics serves)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else CollectorRegistry()
        self.duration = Histogram(
            "resourcepoolstatus_request_processing_duration_seconds",
            "Time from queueing a ResourcePoolStatusRequest to writing its status.",
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.errors = Counter(
            "resourcepoolstatus_request_processing_errors_total",
            "ResourcePoolStatusRequest processing attempts that failed, and Failed answers.",
            registry=registry,
        )
        self.processed = Counter(
            "resourcepoolstatus_requests_processed_total",
            "ResourcePoolStatusRequest statuses written by this server.",
            registry=registry,
        )


class PoolStatusRequestController:
    def __init__(
        self,
        index: PoolIndex,
        requests: Source,
        registry: Registry,
        metrics: PoolStatusMetrics | None = None,
        *,
        component: str = "dra-apiserver",
        rate: float = 20.0,
        burst: int = 100,
        incomplete_retries: int = 5,
        incomplete_delay: float = 0.5,
        error_retries: int = 5,
        error_delay: float = 1.0,
        settle_timeout: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.index = index
        self.requests = requests
        self.registry = registry
        self.status = StatusSubresource(registry)
        self.metrics = metrics or PoolStatusMetrics()
        self.options = WriteOptions(field_manager=component)
        self.queue = CoalescingQueue(0.0, clock)
        self.bucket = TokenBucket(rate, burst, clock)
        self.incomplete_retries = incomplete_retries
        self.incomplete_delay = incomplete_delay
        self.error_retries = error_retries
        self.error_delay = error_delay
        self.settle_timeout = settle_timeout
        self.clock = clock
        self._queued_at: dict[str, float] = {}
        self._attempts: dict[str, int] = {}
        self._incomplete: dict[str, int] = {}
        self._later: dict[str, asyncio.TimerHandle] = {}
        self._task = BackgroundTask("pool status requests", self._run, log)
        requests.add_handler(self._on_request)

    # -- lifecycle ---------------------------------------------------------------

    def _on_request(self, event: SourceEvent) -> None:
        if event.type is EventType.DELETED:
            self._forget(event.key)
        elif not is_processed(event.obj):
            self._queued_at.setdefault(event.key, self.clock())
            self.queue.add(event.key)

    def _forget(self, name: str) -> None:
        self.queue.forget(name)
        self._queued_at.pop(name, None)
        self._attempts.pop(name, None)
        self._incomplete.pop(name, None)
        later = self._later.pop(name, None)
        if later is not None:
            later.cancel()

    def _retry_after(self, name: str, delay: float) -> None:
        previous = self._later.pop(name, None)
        if previous is not None:
            previous.cancel()
        loop = asyncio.get_running_loop()
        self._later[name] = loop.call_later(delay, self._requeue, name)

    def _requeue(self, name: str) -> None:
        self._later.pop(name, None)
        self.queue.add(name)

    async def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.close()
        for later in self._later.values():
            later.cancel()
        self._later.clear()

    async def _run(self) -> None:
        await self.index.wait_synced()
        await self.requests.wait_synced()
        await run_worker(self.queue, self.bucket, self.sync, self._failed)

    def _failed(self, name: str, exc: Exception) -> None:
        self.metrics.errors.inc()
        attempts = self._attempts.get(name, 0) + 1
        self._attempts[name] = attempts
        delay = self.error_delay * 2 ** min(attempts - 1, 6)
        log.error(
            "resourcepoolstatusrequest %s: attempt %d failed; retrying in %.1f s",
            name,
            attempts,
            delay,
            exc_info=exc,
        )
        self._retry_after(name, delay)

    # -- one request -------------------------------------------------------------------

    async def sync(self, name: str) -> bool:
        """Answer the request ``name`` if it still needs an answer; True if this call wrote
        its status."""
        obj = self.requests.get(name)
        if obj is None or is_processed(obj):
            self._forget(name)
            return False
        spec = obj.get("spec") or {}
        generation = int((obj.get("metadata") or {}).get("generation") or 1)
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settle_timeout):
                    await self.index.settle()
            summaries = await self.index.summaries(
                str(spec.get("driver", "")), spec.get("poolName")
            )
        except Exception as exc:
            if self._attempts.get(name, 0) + 1 < self.error_retries:
                raise
            self.metrics.errors.inc()
            log.exception("resourcepoolstatusrequest %s: giving up", name)
            message = f"the pools could not be summarized: {type(exc).__name__}: {exc}"
            status = failed_status(CALCULATION_FAILED, message, now_rfc3339(), generation)
            return await self._write(name, obj, status, failed=True)
        if any(s.incomplete for s in summaries):
            tried = self._incomplete.get(name, 0)
            if tried < self.incomplete_retries:
                self._incomplete[name] = tried + 1
                self._retry_after(name, self.incomplete_delay)
                return False
        limit = spec.get("limit")
        limit = limit if isinstance(limit, int) and limit > 0 else LIMIT_DEFAULT
        status = request_status(summaries, limit, now_rfc3339(), generation)
        return await self._write(name, obj, status)

    def _refused(self, name: str, err: errors.StatusError) -> bool:
        """Whether the server will not take this status: a client error (say, too large), or
        an internal one that persisted through the retries. An unavailable or slow store is
        waited out instead."""
        if 400 <= err.code < 500:
            return True
        if err.code in (503, 504):
            return False
        return self._attempts.get(name, 0) + 1 >= self.error_retries

    async def _write(self, name: str, obj: JSON, status: JSON, *, failed: bool = False) -> bool:
        """Write ``status`` on the version of the request that was read; on a conflict read
        again and stop if someone else answered it."""
        current = obj
        while True:
            body = {
                **current,
                "metadata": {
                    **current["metadata"],
                    "resourceVersion": str(object_revision(current)),
                },
                "status": status,
            }
            try:
                await self.status.update(None, name, body, self.options)
            except errors.StatusError as err:
                if err.code == 404:
                    self._forget(name)
                    return False
                if err.code == 409:
                    try:
                        current = (await self.registry.get(None, name)).obj
                    except errors.StatusError as gone:
                        if gone.code == 404:
                            self._forget(name)
                            return False
                        raise
                    if is_processed(current):
                        log.debug("resourcepoolstatusrequest %s was answered elsewhere", name)
                        self._forget(name)
                        return False
                    continue
                if not failed and self._refused(name, err):
                    self.metrics.errors.inc()
                    log.warning("resourcepoolstatusrequest %s: status refused: %s", name, err)
                    message = f"the status was refused ({err.code} {err.reason}): {err.message}"
                    refused = failed_status(
                        STATUS_REJECTED,
                        clip(message, MESSAGE_MAX),
                        str(status.get("observationTime") or now_rfc3339()),
                        int(current["metadata"].get("generation") or 1),
                    )
                    return await self._write(name, current, refused, failed=True)
                raise
            break
        began = self._queued_at.get(name)
        if began is not None:
            self.metrics.duration.observe(max(0.0, self.clock() - began))
        self.metrics.processed.inc()
        self._forget(name)
        return True

"""Deletes ResourcePoolStatusRequests once they have served their purpose (a KEP-5677 Beta item).

* A completed request (``status.observationTime`` set) is deleted ``ttlSecondsAfterComplete``
  seconds after that time — its own ``spec.ttlSecondsAfterComplete``, else the server's
  default (one hour). 0 deletes it as soon as it is complete.
* A request never completed is deleted ``pending_ttl`` seconds (24 hours) after its creation.

The cleaner reads the request cache, deletes what is due (with the uid as precondition, so
a request recreated under the same name is not touched), then sleeps until the next
deadline, at most ``interval``, or until a request changes. Timestamps have a resolution of
one second, as Kubernetes writes them. With several replicas each one runs it; a request
another replica deleted first is simply gone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from ..machinery import DeleteOptions, Registry, errors
from ..sources import Source
from ..toolkit import JSON
from ..toolkit.timestamps import parse_rfc3339
from .sweeping import SweepingController

log = logging.getLogger("apiserver.controllers.requestcleanup")

DEFAULT_TTL = 3600.0
PENDING_TTL = 24 * 3600.0


def _now() -> datetime:
    return datetime.now(UTC)


def deadline(obj: JSON, ttl: float, pending_ttl: float) -> datetime | None:
    """When the request is due for deletion; None if it never is (no timestamp to go by)."""
    status = obj.get("status") or {}
    completed = parse_rfc3339(status.get("observationTime"))
    if completed is not None:
        own = (obj.get("spec") or {}).get("ttlSecondsAfterComplete")
        seconds = own if isinstance(own, int) and not isinstance(own, bool) else ttl
        return completed + timedelta(seconds=seconds)
    created = parse_rfc3339((obj.get("metadata") or {}).get("creationTimestamp"))
    return created + timedelta(seconds=pending_ttl) if created is not None else None


class RequestCleaner(SweepingController):
    def __init__(
        self,
        requests: Source,
        registry: Registry,
        *,
        ttl: float = DEFAULT_TTL,
        pending_ttl: float = PENDING_TTL,
        interval: float = 60.0,
        now: Callable[[], datetime] = _now,
    ) -> None:
        super().__init__(requests, "pool status request cleanup", log)
        self.requests = requests
        self.registry = registry
        self.ttl = ttl
        self.pending_ttl = pending_ttl
        self.interval = interval
        self.retry_after = interval
        self.now = now
        self.deleted = 0

    async def _sweep(self) -> float:
        _, wait = await self.sweep()
        return min(self.interval, wait)

    async def sweep(self) -> tuple[list[str], float]:
        """Delete every request that is due; the names deleted, and the seconds until the
        next deadline (``interval`` if there is none)."""
        now = self.now()
        due: list[JSON] = []
        wait = self.interval
        for obj in self.requests.items():
            if (obj.get("metadata") or {}).get("deletionTimestamp"):
                continue  # being deleted already (finalizers pending)
            when = deadline(obj, self.ttl, self.pending_ttl)
            if when is None:
                continue
            if when <= now:
                due.append(obj)
            else:
                wait = min(wait, (when - now).total_seconds())
        deleted = []
        for obj in due:
            meta = obj.get("metadata") or {}
            name = str(meta.get("name", ""))
            try:
                await self.registry.delete(
                    None, name, DeleteOptions(precondition_uid=meta.get("uid"))
                )
            except errors.StatusError as err:
                if err.code in (404, 409):
                    continue  # gone already, or a new request under the same name
                raise
            deleted.append(name)
            self.deleted += 1
            log.info("deleted resourcepoolstatusrequest %s: its time to live is over", name)
        return deleted, wait

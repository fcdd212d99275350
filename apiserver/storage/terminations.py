"""Watchers cut off for falling behind: each is logged and counted by resource.

A fan-out closes a subscriber whose buffer stays full, or overflows (as Kubernetes'
cacher does); its client re-watches. That used to happen silently. Here every cut-off is
logged and counted per group-resource, served on ``/metrics`` as kube-apiserver's
``apiserver_terminated_watchers_total{resource="<plural>.<group>"}``.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("apiserver.watch")


def resource_of(prefix: str) -> str:
    """``resourceslices.resource.k8s.io`` for the key prefix ``/resource.k8s.io/resourceslices/…``
    (``events`` for a core-group prefix ``/core/events/``)."""
    parts = [p for p in prefix.split("/") if p]
    if len(parts) < 2:
        return prefix or "unknown"
    group, plural = parts[0], parts[1]
    return plural if group == "core" else f"{plural}.{group}"


class TerminatedWatchers:
    """The count of watchers cut off, per resource, since the process started."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def record(self, prefix: str, why: str) -> None:
        """Count a watcher of ``prefix`` cut off, and log ``why`` (kube-apiserver's words)."""
        resource = resource_of(prefix)
        with self._lock:
            self._counts[resource] = self._counts.get(resource, 0) + 1
        log.warning(
            "Forcing %s watcher close due to unresponsiveness: %s (prefix %s); its client"
            " will re-watch",
            resource,
            why,
            prefix,
        )

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


TERMINATED = TerminatedWatchers()
"""The process's one tally; every fan-out records into it."""

"""The status of each ResourceSlicePatch, and warning Events about its faulty selectors.

From the device view's report of a patch, the controller writes through the status
subresource:

* ``observedGeneration``: the generation the view evaluated;
* ``matchedDevices``: how many devices the patch applies to;
* condition ``SelectorsValid``: True, or False with reason ``FaultySelector`` (a selector
  failed to evaluate for some devices, which the patch then skips), ``InvalidSelector``
  (one does not compile) or ``DeviceClassNotFound`` / ``InvalidDeviceClass``.

Each distinct failure (patch, selector, error) also gets one Warning Event, bumped when it
reappears or hits more devices. Writes are rate-limited: at most one round per patch per
``interval`` (bursts coalesce into the latest state) and ``rate`` rounds a second overall;
nothing is written when the stored status already says the same.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import orjson

from ..api import CONDITION_MESSAGE_WRITTEN_MAX as MESSAGE_MAX
from ..devices import DeviceView, PatchReport
from ..machinery import Registry, StatusSubresource, WriteOptions, errors
from ..sources import Source, SourceEvent
from ..tasks import BackgroundTask
from ..toolkit import JSON, MERGE_PATCH, CoalescingQueue, TokenBucket, run_worker
from ..toolkit.timestamps import now_rfc3339
from .events import EventRecorder

log = logging.getLogger("apiserver.controllers.patchstatus")

CONDITION = "SelectorsValid"


def selectors_condition(report: PatchReport) -> tuple[str, str, str]:
    """(status, reason, message) of the SelectorsValid condition."""
    if report.problem is not None:
        return "False", report.problem_reason or "InvalidSelector", report.problem[:MESSAGE_MAX]
    if report.faults:
        parts = [
            f"{f.selector} failed for {f.devices} device(s), e.g. {f.example}: {f.message}"
            for f in report.faults
        ]
        message = "; ".join(parts) + "; the patch skips those devices"
        return "False", "FaultySelector", message[:MESSAGE_MAX]
    return "True", "Valid", "every selector evaluates for every device it is applied to"


def desired_status(report: PatchReport, current: JSON | None, now: str) -> JSON:
    """The status to write: ours, with conditions of other types kept as they are."""
    current = current or {}
    status, reason, message = selectors_condition(report)
    previous = next(
        (
            c
            for c in current.get("conditions") or ()
            if isinstance(c, dict) and c.get("type") == CONDITION
        ),
        None,
    )
    since = now
    if previous is not None and previous.get("status") == status:
        since = previous.get("lastTransitionTime") or now
    condition = {
        "type": CONDITION,
        "status": status,
        "observedGeneration": report.generation,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    }
    others = [
        c
        for c in current.get("conditions") or ()
        if isinstance(c, dict) and c.get("type") != CONDITION
    ]
    return {
        "observedGeneration": report.generation,
        "matchedDevices": report.matched,
        "conditions": [*others, condition],
    }


def _same(current: JSON | None, desired: JSON) -> bool:
    current = current or {}
    return all(current.get(k) == v for k, v in desired.items())


class PatchStatusController:
    def __init__(
        self,
        view: DeviceView,
        patches: Source,
        registry: Registry,
        events: EventRecorder | None,
        *,
        component: str = "dra-apiserver",
        interval: float = 1.0,
        rate: float = 20.0,
        burst: int = 50,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.view = view
        self.patches = patches
        self.status = StatusSubresource(registry)
        self.events = events
        self.options = WriteOptions(field_manager=component)
        self.queue = CoalescingQueue(interval, clock)
        self.bucket = TokenBucket(rate, burst, clock)
        self._faults: dict[str, tuple[str, dict[tuple[str, str], int]]] = {}
        """Per patch name: its uid, and the failures already recorded with on how many
        devices (forgotten when the patch is gone or has another uid)."""
        self._unseen: set[str] = set()
        """Patches whose last round found no report from the view: their report is worked
        at once, not after the interval (that round wrote nothing)."""
        self._task = BackgroundTask("patch status", self._run, log)
        view.subscribe_patches(self._on_reports)
        patches.add_handler(self._on_patch)

    def _on_reports(self, reports: list[PatchReport]) -> None:
        for report in reports:
            if report.name in self._unseen:
                self._unseen.discard(report.name)
                self.queue.forget(report.name)
            self.queue.add(report.name)

    def _on_patch(self, event: SourceEvent) -> None:
        # Someone else may have written the status: compare (and restore) on the next round.
        self.queue.add(event.key)

    async def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.close()

    async def _run(self) -> None:
        await self.view.wait_synced()
        await run_worker(self.queue, self.bucket, self.sync, self._failed)

    def _failed(self, name: str, exc: Exception) -> None:
        log.error("patch status of %s failed; retrying", name, exc_info=exc)
        self.queue.add(name)

    async def sync(self, name: str) -> None:
        """Bring the status and Events of one patch in line with the view's report."""
        obj = self.patches.get(name)
        if obj is None:
            self.queue.forget(name)
            self._faults.pop(name, None)
            self._unseen.discard(name)
            return
        uid = (obj.get("metadata") or {}).get("uid")
        report = self.view.patch_report(name)
        if report is None or report.uid != uid:
            self._unseen.add(name)  # the view has not seen this patch yet; its report will come
            return
        current = obj.get("status")
        desired = desired_status(report, current, now_rfc3339())
        if not _same(current, desired):
            try:
                await self.status.patch(
                    None, name, orjson.dumps({"status": desired}), MERGE_PATCH, self.options
                )
            except errors.StatusError as err:
                if err.code != 404:
                    raise
                return
        await self._record_failures(obj, report)

    async def _record_failures(self, obj: JSON, report: PatchReport) -> None:
        if self.events is None:
            return
        recorded = self._faults.get(report.name)
        seen = recorded[1] if recorded is not None and recorded[0] == report.uid else {}
        now: dict[tuple[str, str], int] = {}
        for fault in report.faults:
            key = (fault.selector, fault.message)
            now[key] = fault.devices
            if seen.get(key, 0) < fault.devices:
                message = (
                    f"{fault.selector} failed for {fault.devices} device(s), e.g. "
                    f"{fault.example}: {fault.message}; the patch skips those devices"
                )
                await self.events.warn(obj, "\n".join(key), "FaultySelector", message[:MESSAGE_MAX])
        if report.problem is not None:
            key = ("problem", report.problem)
            now[key] = 1
            if key not in seen:
                reason = selectors_condition(report)[1]
                await self.events.warn(obj, "\n".join(key), reason, report.problem[:MESSAGE_MAX])
        self._faults[report.name] = (report.uid, now)

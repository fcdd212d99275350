"""Controllers: background loops that write what the device view computes back to objects.

``PatchStatusController`` keeps each ResourceSlicePatch's status (matched devices, the
SelectorsValid condition) and warning Events about faulty selectors, rate-limited.
"""

from .events import EventRecorder, RegistryEventRecorder, event_name
from .patchstatus import PatchStatusController, desired_status, selectors_condition
from .queue import CoalescingQueue, TokenBucket

__all__ = [
    "CoalescingQueue",
    "EventRecorder",
    "PatchStatusController",
    "RegistryEventRecorder",
    "TokenBucket",
    "desired_status",
    "event_name",
    "selectors_condition",
]

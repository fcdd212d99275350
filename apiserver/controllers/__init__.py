"""Controllers: background loops that write what the device view computes back to objects.

``PatchStatusController`` keeps each ResourceSlicePatch's status (matched devices, the
SelectorsValid condition) and warning Events about faulty selectors, rate-limited.
``PoolStatusRequestController`` answers each ResourcePoolStatusRequest once from the
``PoolIndex`` (pools kept current from the view, the slices and the claims), and
``RequestCleaner`` deletes requests whose time to live is over. ``ClusterRoleAggregationController``
writes aggregated ClusterRoles' rules; ``ensure_policy`` creates the bootstrap RBAC policy.
"""

from .clusterroleaggregation import ClusterRoleAggregationController
from .events import EventRecorder, RegistryEventRecorder, event_name
from .patchstatus import PatchStatusController, desired_status, selectors_condition
from .poolindex import PoolIndex, allocated_devices
from .poolstatus import (
    PoolStatusMetrics,
    PoolStatusRequestController,
    failed_status,
    is_processed,
    request_status,
    validation_errors,
)
from .poolsummary import (
    DeviceFacts,
    PoolSummary,
    SliceFacts,
    device_facts,
    slice_facts,
    summarize,
)
from .rbacbootstrap import ensure_policy
from .requestcleanup import RequestCleaner, deadline

__all__ = [
    "ClusterRoleAggregationController",
    "DeviceFacts",
    "EventRecorder",
    "PatchStatusController",
    "PoolIndex",
    "PoolStatusMetrics",
    "PoolStatusRequestController",
    "PoolSummary",
    "RegistryEventRecorder",
    "RequestCleaner",
    "SliceFacts",
    "allocated_devices",
    "deadline",
    "desired_status",
    "device_facts",
    "ensure_policy",
    "event_name",
    "failed_status",
    "is_processed",
    "request_status",
    "selectors_condition",
    "slice_facts",
    "summarize",
    "validation_errors",
]

"""Controllers: background loops that write what the device view computes back to objects.

``PatchStatusController`` keeps each ResourceSlicePatch's status (matched devices, the
SelectorsValid condition) and warning Events about faulty selectors, rate-limited.
``PoolStatusRequestController`` answers each ResourcePoolStatusRequest once from the
``PoolIndex`` of ``apiserver.pools`` (pools kept current from the view, the slices and the
claims), and ``RequestCleaner`` deletes requests whose time to live is over.
``ClusterRoleAggregationController`` writes aggregated ClusterRoles' rules; ``ensure_policy``
creates the bootstrap RBAC policy.
"""

from ..pools import PoolIndex, PoolSummary
from .clusterroleaggregation import ClusterRoleAggregationController
from .events import EventRecorder, RegistryEventRecorder, event_name
from .patchstatus import PatchStatusController, desired_status, selectors_condition
from .poolstatus import (
    PoolStatusMetrics,
    PoolStatusRequestController,
    failed_status,
    is_processed,
    request_status,
    validation_errors,
)
from .rbacbootstrap import ensure_policy
from .requestcleanup import RequestCleaner, deadline

__all__ = [
    "ClusterRoleAggregationController",
    "EventRecorder",
    "PatchStatusController",
    "PoolIndex",
    "PoolStatusMetrics",
    "PoolStatusRequestController",
    "PoolSummary",
    "RegistryEventRecorder",
    "RequestCleaner",
    "deadline",
    "desired_status",
    "ensure_policy",
    "event_name",
    "failed_status",
    "is_processed",
    "request_status",
    "selectors_condition",
    "validation_errors",
]

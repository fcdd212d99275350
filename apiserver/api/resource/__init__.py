"""Types of the ``resource.k8s.io`` group: DRA devices and the kinds of the five proposals, their
validation, and the plain views of slices and claims that the layers above compute with.

The group's face: other layers import from here, never from its modules; ``group`` (the group
and version names) is light and may be named directly by code that must not load the rest."""

from .allocationreview import ANSWER_SCORES, RESERVATION_SECONDS_DEFAULT, AllocationReview
from .capacity import Capacity, device_capacities, quantity_text, requested, share
from .computeddevice import Device as ComputedDevice
from .device import DeviceCapacity
from .deviceclass import DeviceClass
from .devicereservation import DeviceReservation
from .devicetaintrule import DeviceTaintRule, DeviceTaintRuleStatus, set_rule_taint_time
from .group import DRA_GROUP, DRA_VERSION
from .mixins import flatten_slice
from .resourceclaim import (
    ATTACH_FAILED,
    IS_ATTACHED,
    NEEDS_ATTACHING,
    ResourceClaim,
    set_claim_spec_defaults,
)
from .resourceclaimtemplate import ResourceClaimTemplate
from .resourcepool import ResourcePool
from .resourcepoolstatusrequest import (
    LIMIT_DEFAULT,
    VALIDATION_ERROR_MAX_LENGTH,
    VALIDATION_ERRORS_MAX,
    ResourcePoolStatusRequest,
)
from .resourcepoolstatusrequest_conversion import to_v1alpha1 as pool_status_request_to_v1alpha1
from .resourcepoolstatusrequest_conversion import to_v1alpha3 as pool_status_request_to_v1alpha3
from .resourcepoolstatusrequest_v1alpha3 import VERSION as POOL_STATUS_REQUEST_V1ALPHA3
from .resourcepoolstatusrequest_v1alpha3 import (
    ResourcePoolStatusRequest as ResourcePoolStatusRequestV1alpha3,
)
from .resourceslice import ResourceSlice, set_taint_times
from .resourceslicepatch import ResourceSlicePatch, set_patch_taint_times
from .validation.allocationreview import validate_allocation_review
from .validation.deviceclass import validate_device_class
from .validation.devicereservation import (
    validate_device_reservation,
    validate_device_reservation_update,
)
from .validation.devicetaintrule import (
    validate_device_taint_rule,
    validate_device_taint_rule_status,
)
from .validation.resourceclaim import (
    validate_resource_claim,
    validate_resource_claim_status_update,
    validate_resource_claim_update,
)
from .validation.resourceclaimtemplate import (
    validate_resource_claim_template,
    validate_resource_claim_template_update,
)
from .validation.resourcepoolstatusrequest import (
    validate_resource_pool_status_request,
    validate_resource_pool_status_request_status,
    validate_resource_pool_status_request_update,
)
from .validation.resourcepoolstatusrequest_v1alpha3 import (
    validate_request as validate_pool_status_request_v1alpha3,
)
from .validation.resourcepoolstatusrequest_v1alpha3 import (
    validate_request_status as validate_pool_status_request_status_v1alpha3,
)
from .validation.resourcepoolstatusrequest_v1alpha3 import (
    validate_request_update as validate_pool_status_request_update_v1alpha3,
)
from .validation.resourceslice import validate_resource_slice
from .validation.resourceslicepatch import (
    validate_resource_slice_patch,
    validate_resource_slice_patch_status,
)
from .views import (
    ALL_NODES,
    NODE_NAME,
    NODE_SELECTOR,
    PER_DEVICE,
    AllocatedDevice,
    Counters,
    DeviceID,
    Placement,
    SliceView,
    as_dict,
    claim_results,
    consumed_counters,
    dedicated_devices,
    device_placement,
    placement,
    placement_text,
    shared_devices,
    slice_view,
)

__all__ = [
    "ALL_NODES",
    "ANSWER_SCORES",
    "ATTACH_FAILED",
    "DRA_GROUP",
    "DRA_VERSION",
    "IS_ATTACHED",
    "LIMIT_DEFAULT",
    "NEEDS_ATTACHING",
    "NODE_NAME",
    "NODE_SELECTOR",
    "PER_DEVICE",
    "POOL_STATUS_REQUEST_V1ALPHA3",
    "RESERVATION_SECONDS_DEFAULT",
    "VALIDATION_ERRORS_MAX",
    "VALIDATION_ERROR_MAX_LENGTH",
    "AllocatedDevice",
    "AllocationReview",
    "Capacity",
    "ComputedDevice",
    "Counters",
    "DeviceCapacity",
    "DeviceClass",
    "DeviceID",
    "DeviceReservation",
    "DeviceTaintRule",
    "DeviceTaintRuleStatus",
    "Placement",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourcePool",
    "ResourcePoolStatusRequest",
    "ResourcePoolStatusRequestV1alpha3",
    "ResourceSlice",
    "ResourceSlicePatch",
    "SliceView",
    "as_dict",
    "claim_results",
    "consumed_counters",
    "dedicated_devices",
    "device_capacities",
    "device_placement",
    "flatten_slice",
    "placement",
    "placement_text",
    "pool_status_request_to_v1alpha1",
    "pool_status_request_to_v1alpha3",
    "quantity_text",
    "requested",
    "set_claim_spec_defaults",
    "set_patch_taint_times",
    "set_rule_taint_time",
    "set_taint_times",
    "share",
    "shared_devices",
    "slice_view",
    "validate_allocation_review",
    "validate_device_class",
    "validate_device_reservation",
    "validate_device_reservation_update",
    "validate_device_taint_rule",
    "validate_device_taint_rule_status",
    "validate_pool_status_request_status_v1alpha3",
    "validate_pool_status_request_update_v1alpha3",
    "validate_pool_status_request_v1alpha3",
    "validate_resource_claim",
    "validate_resource_claim_status_update",
    "validate_resource_claim_template",
    "validate_resource_claim_template_update",
    "validate_resource_claim_update",
    "validate_resource_pool_status_request",
    "validate_resource_pool_status_request_status",
    "validate_resource_pool_status_request_update",
    "validate_resource_slice",
    "validate_resource_slice_patch",
    "validate_resource_slice_patch_status",
]

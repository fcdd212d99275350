"""Types of the ``resource.k8s.io`` group: DRA devices and the kinds of the five proposals, their
validation, and the plain views of slices and claims that the layers above compute with.

The group's face: other layers import from here, never from its modules."""

DRA_GROUP = "resource.k8s.io"
"""The group of the DRA kinds upstream serves (ResourceSlice, DeviceClass, ResourceClaim…),
and the default group of the kinds this server adds (``--group``)."""
DRA_VERSION = "v1"
"""The version of the DRA kinds upstream serves."""

# The constants above come first: they need nothing, and nothing below imports them from here.
from .allocationreview import ANSWER_SCORES, RESERVATION_SECONDS_DEFAULT, AllocationReview  # noqa: E402
from .capacity import Capacity, device_capacities, quantity_text, requested, share  # noqa: E402
from .computeddevice import Device as ComputedDevice  # noqa: E402
from .device import DeviceCapacity  # noqa: E402
from .deviceclass import DeviceClass  # noqa: E402
from .devicereservation import DeviceReservation  # noqa: E402
from .devicetaintrule import DeviceTaintRule, DeviceTaintRuleStatus, set_rule_taint_time  # noqa: E402
from .mixins import flatten_slice  # noqa: E402
from .resourceclaim import (  # noqa: E402
    ATTACH_FAILED,
    IS_ATTACHED,
    NEEDS_ATTACHING,
    ResourceClaim,
    set_claim_spec_defaults,
)
from .resourceclaimtemplate import ResourceClaimTemplate  # noqa: E402
from .resourcepool import ResourcePool  # noqa: E402
from .resourcepoolstatusrequest import (  # noqa: E402
    LIMIT_DEFAULT,
    VALIDATION_ERROR_MAX_LENGTH,
    VALIDATION_ERRORS_MAX,
    ResourcePoolStatusRequest,
)
from .resourceslice import ResourceSlice, set_taint_times  # noqa: E402
from .resourceslicepatch import ResourceSlicePatch, set_patch_taint_times  # noqa: E402
from .validation.allocationreview import validate_allocation_review  # noqa: E402
from .validation.deviceclass import validate_device_class  # noqa: E402
from .validation.devicereservation import (  # noqa: E402
    validate_device_reservation,
    validate_device_reservation_update,
)
from .validation.devicetaintrule import (  # noqa: E402
    validate_device_taint_rule,
    validate_device_taint_rule_status,
)
from .validation.resourceclaim import (  # noqa: E402
    validate_resource_claim,
    validate_resource_claim_status_update,
    validate_resource_claim_update,
)
from .validation.resourceclaimtemplate import (  # noqa: E402
    validate_resource_claim_template,
    validate_resource_claim_template_update,
)
from .validation.resourcepoolstatusrequest import (  # noqa: E402
    validate_resource_pool_status_request,
    validate_resource_pool_status_request_status,
    validate_resource_pool_status_request_update,
)
from .validation.resourceslice import validate_resource_slice  # noqa: E402
from .validation.resourceslicepatch import (  # noqa: E402
    validate_resource_slice_patch,
    validate_resource_slice_patch_status,
)
from .views import (  # noqa: E402
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

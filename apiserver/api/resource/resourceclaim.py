"""``resource.k8s.io/v1`` ResourceClaim: a request for devices, and the allocation that answers it.

The upstream v1 shape plus the proposals' fields: the KEP-5254 ``cel`` constraint over the
whole chosen set of devices, and for KEP-5007 the binding conditions copied into allocation
results and ``nodeName`` on the status of an allocated device.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..base import APIModel, Quantity, Time
from ..core.nodeselector import NodeSelector
from ..meta import CONDITIONS_SCHEMA_EXTRA, Condition, KindModel
from .device import DeviceSelector, DeviceTaintEffect
from .deviceclass import OpaqueDeviceConfiguration, RawObject

REQUESTS_MAX = 32
SUBREQUESTS_MAX = 8
SELECTORS_MAX = 32
CONSTRAINTS_MAX = 32
CONFIG_MAX = 32
TOLERATIONS_MAX = 16
ALLOCATION_RESULTS_MAX = 32
ALLOCATION_CONFIG_MAX = 2 * CONFIG_MAX
BINDING_CONDITIONS_MAX = 4
RESERVED_FOR_MAX = 256
DEVICE_CONDITIONS_MAX = 8
DEVICE_DATA_MAX_LENGTH = 10 * 1024
NETWORK_INTERFACE_NAME_MAX = 256
NETWORK_IPS_MAX = 16
NETWORK_HARDWARE_ADDRESS_MAX = 128

AllocationMode = Literal["ExactCount", "All"]
TolerationOperator = Literal["Equal", "Exists"]
ConfigSource = Literal["FromClass", "FromClaim"]

# KEP-5007 condition types on an allocated device's status; NEEDS_ATTACHING is also the device
# attribute that marks a fabric device (validation and the allocator read it from here).
NEEDS_ATTACHING = "kubernetes.io/needs-attaching"
IS_ATTACHED = "kubernetes.io/is-attached"
ATTACH_FAILED = "kubernetes.io/attach-failed"


# -- spec ---------------------------------------------------------------------------------------


class DeviceToleration(APIModel):
    """Tolerates a device taint: the device may be allocated (and kept) despite the taint."""

    key: str | None = Field(
        None,
        description="Key is the taint key that the toleration applies to. Empty means match all "
        "taint keys; then the operator must be Exists. Must be a label name.",
    )
    operator: TolerationOperator | None = Field(
        None,
        description="Operator represents a key's relationship to the value: Exists or Equal. "
        "Defaults to Equal. Exists is equivalent to a wildcard for the value.",
    )
    value: str | None = Field(
        None,
        description="Value is the taint value the toleration matches to. Must be empty for "
        "Exists, otherwise a label value.",
    )
    effect: DeviceTaintEffect | None = Field(
        None,
        description="Effect indicates the taint effect to match. Empty means match all taint "
        "effects. Allowed values are None, NoSchedule and NoExecute.",
    )
    toleration_seconds: int | None = Field(
        None,
        description="TolerationSeconds represents the period of time the toleration (which must "
        "be of effect NoExecute) tolerates the taint. By default it is not set, which means "
        "tolerate the taint forever. Zero and negative values mean evict immediately.",
    )


class CapacityRequirements(APIModel):
    """How much of each capacity of a device a request needs (consumable capacity)."""

    requests: dict[str, Quantity] | None = Field(
        None,
        description="Requests is a map of the minimum amount of each capacity that the device "
        "must provide, by qualified capacity name. A device that lacks a named capacity or "
        "provides less does not satisfy the request.",
    )


class ExactDeviceRequest(APIModel):
    """A request for one or more identical devices."""

    device_class_name: str = Field(
        description="DeviceClassName references a specific DeviceClass, which can define "
        "additional configuration and selectors to be inherited by this request. Required."
    )
    selectors: list[DeviceSelector] | None = Field(
        None,
        description="Selectors define criteria which must be satisfied by a specific device in "
        f"order for that device to be considered for this request. All selectors must be "
        f"satisfied for a device to be considered. At most {SELECTORS_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    allocation_mode: AllocationMode | None = Field(
        None,
        description="AllocationMode and its related fields define how devices are allocated to "
        "satisfy this request: ExactCount (the default) asks for exactly `count` devices; All "
        "asks for all devices matching the request, and allocation fails if one of them is "
        "already allocated.",
    )
    count: int | None = Field(
        None,
        description="Count is used only when the count mode is ExactCount. Must be greater "
        "than zero. Defaults to 1.",
    )
    admin_access: bool | None = Field(
        None,
        description="AdminAccess indicates that this is a claim for administrative access to "
        "the device(s). Claims with AdminAccess are not counted as using the device, so other "
        "claims can still allocate it.",
    )
    tolerations: list[DeviceToleration] | None = Field(
        None,
        description="If specified, the request's tolerations: which device taints it tolerates. "
        f"At most {TOLERATIONS_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    capacity: CapacityRequirements | None = Field(
        None,
        description="Capacity defines resource requirements against each capacity of a device "
        "that allows multiple allocations.",
    )


class DeviceSubRequest(APIModel):
    """One alternative of a firstAvailable request: like an exact request, with a name."""

    name: str = Field(
        description="Name can be used to reference this subrequest in constraints and config, "
        "as <main request>/<subrequest>. Must be a DNS label, unique within the request."
    )
    device_class_name: str = Field(
        description="DeviceClassName references a specific DeviceClass, which can define "
        "additional configuration and selectors to be inherited by this subrequest. Required."
    )
    selectors: list[DeviceSelector] | None = Field(
        None,
        description="Selectors define criteria which must be satisfied by a specific device in "
        f"order for that device to be considered for this subrequest. At most {SELECTORS_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    allocation_mode: AllocationMode | None = Field(
        None,
        description="AllocationMode: ExactCount (the default) or All, as for an exact request.",
    )
    count: int | None = Field(
        None,
        description="Count is used only when the count mode is ExactCount. Must be greater "
        "than zero. Defaults to 1.",
    )
    tolerations: list[DeviceToleration] | None = Field(
        None,
        description=f"If specified, the subrequest's tolerations. At most {TOLERATIONS_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    capacity: CapacityRequirements | None = Field(
        None,
        description="Capacity defines resource requirements against each capacity of a device "
        "that allows multiple allocations.",
    )


class DeviceRequest(APIModel):
    """A request for devices: exactly one of `exactly` or `firstAvailable` must be set."""

    name: str = Field(
        description="Name can be used to reference this request in constraints and config. "
        "Must be a DNS label, unique within the claim."
    )
    exactly: ExactDeviceRequest | None = Field(
        None,
        description="Exactly specifies the details for a single request that must be met "
        "exactly for the request to be satisfied.",
    )
    first_available: list[DeviceSubRequest] | None = Field(
        None,
        description="FirstAvailable contains subrequests, of which exactly one will be selected "
        "by the scheduler. It tries to satisfy them in the order in which they are listed. "
        f"At most {SUBREQUESTS_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class CELDeviceConstraint(APIModel):
    """A CEL expression over the whole set of devices chosen for the named requests (KEP-5254)."""

    expression: str = Field(
        description="Expression is a CEL expression which evaluates a group of devices. It must "
        "evaluate to true when the devices under consideration satisfy the desired criteria, "
        "and false when they do not. Any other result is an error and causes allocation of "
        "devices to abort. The expression's input is an object named `devices`, a list of "
        "device objects with the properties driver (string), attributes (map of attributes "
        'grouped by domain, e.g. devices[0].attributes["dra.example.com"].model) and '
        "capacity (map of capacities grouped by domain). It is evaluated once the set of "
        "devices for the named requests is complete; the order of the devices must not matter. "
        "The length of the expression must be smaller or equal to 10 Ki, and its estimated "
        "cost is bounded like that of a selector."
    )


class DeviceConstraint(APIModel):
    """A constraint over devices: one of matchAttribute, distinctAttribute or cel is set."""

    requests: list[str] | None = Field(
        None,
        description="Requests is a list of the one or more requests in this claim which must "
        "co-satisfy this constraint, by name or as <request>/<subrequest>. If empty, the "
        "constraint applies to all requests in the claim.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    match_attribute: str | None = Field(
        None,
        description="MatchAttribute requires that all devices in question have this attribute "
        "and that its type and value are the same across those devices; for list-type "
        "attributes, that the devices' values have at least one element in common (a scalar "
        "counts as a list of one). Must be a fully qualified name (domain/name).",
    )
    distinct_attribute: str | None = Field(
        None,
        description="DistinctAttribute requires that all devices in question have this "
        "attribute and that its values are all different; for list-type attributes, that no "
        "element appears in the values of two devices. Must be a fully qualified name.",
    )
    cel: CELDeviceConstraint | None = Field(
        None,
        description="CEL holds an expression which compares the devices in question and "
        "returns true if they satisfy the constraint (KEP-5254).",
    )


class DeviceClaimConfiguration(APIModel):
    """Configuration parameters for the devices of some requests."""

    requests: list[str] | None = Field(
        None,
        description="Requests lists the names of requests where the configuration applies, by "
        "name or as <request>/<subrequest>. If empty, it applies to all requests.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    opaque: OpaqueDeviceConfiguration | None = Field(
        None, description="Opaque provides driver-specific configuration parameters."
    )


class DeviceClaim(APIModel):
    """How to request devices."""

    requests: list[DeviceRequest] | None = Field(
        None,
        description="Requests represent individual requests for distinct devices which must "
        f"all be satisfied. If empty, nothing needs to be allocated. At most {REQUESTS_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    constraints: list[DeviceConstraint] | None = Field(
        None,
        description="These constraints must be satisfied by the set of devices that get "
        f"allocated for the claim. At most {CONSTRAINTS_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    config: list[DeviceClaimConfiguration] | None = Field(
        None,
        description="This field holds configuration for multiple potential drivers which could "
        "satisfy requests in this claim. It is ignored while allocating the claim. "
        f"At most {CONFIG_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class ResourceClaimSpec(APIModel):
    """What is being requested and how to configure it. Immutable."""

    devices: DeviceClaim | None = Field(None, description="Devices defines how to request devices.")


# -- status -------------------------------------------------------------------------------------


class DeviceRequestAllocationResult(APIModel):
    """The allocation of one device for one request."""

    request: str = Field(
        description="Request is the name of the request in the claim which caused this device "
        "to be allocated, or <request>/<subrequest> for a subrequest of firstAvailable."
    )
    driver: str = Field(
        description="Driver specifies the name of the DRA driver whose kubelet plugin should be "
        "invoked to process the allocation once the claim is needed on a node."
    )
    pool: str = Field(
        description="This name together with the driver name and the device name field "
        "identify which device was allocated. At most 253 characters."
    )
    device: str = Field(
        description="Device references one device instance via its name in the driver's "
        "resource pool. It must be a DNS label."
    )
    admin_access: bool | None = Field(
        None,
        description="AdminAccess indicates that this device was allocated for administrative "
        "access; copied from the request.",
    )
    tolerations: list[DeviceToleration] | None = Field(
        None,
        description="A copy of the tolerations of the request at the time of allocation. "
        f"At most {TOLERATIONS_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    binding_conditions: list[str] | None = Field(
        None,
        description="BindingConditions contains a copy of the device's binding conditions: "
        "conditions that must all be True in the device status before the pod is bound. "
        f"At most {BINDING_CONDITIONS_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    binding_failure_conditions: list[str] | None = Field(
        None,
        description="BindingFailureConditions contains a copy of the device's binding failure "
        "conditions: if any is True, binding failed and the allocation is retried elsewhere. "
        f"At most {BINDING_CONDITIONS_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    share_id: str | None = Field(
        None,
        alias="shareID",
        description="ShareID uniquely identifies an individual allocation share of a device "
        "that allows multiple allocations; a lower-case UUID.",
    )
    consumed_capacity: dict[str, Quantity] | None = Field(
        None,
        description="ConsumedCapacity tracks the amount of capacity consumed per device as part "
        "of the claim request, by qualified capacity name.",
    )


class DeviceAllocationConfiguration(APIModel):
    """Configuration for the allocated devices, from the class or from the claim."""

    source: ConfigSource = Field(
        description="Source records whether the configuration comes from a class (FromClass) "
        "and thus is not something that a normal user would have been able to set, or from a "
        "claim (FromClaim)."
    )
    requests: list[str] | None = Field(
        None,
        description="Requests lists the names of requests where the configuration applies. "
        "If empty, it applies to all requests.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    opaque: OpaqueDeviceConfiguration | None = Field(
        None, description="Opaque provides driver-specific configuration parameters."
    )


class DeviceAllocationResult(APIModel):
    """The devices allocated for the claim, and their configuration."""

    results: list[DeviceRequestAllocationResult] | None = Field(
        None,
        description=f"Results lists all allocated devices. At most {ALLOCATION_RESULTS_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    config: list[DeviceAllocationConfiguration] | None = Field(
        None,
        description="This field is a combination of all the claim and class configuration "
        f"parameters relevant to the allocated devices. At most {ALLOCATION_CONFIG_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class AllocationResult(APIModel):
    """Where and which devices were allocated. Immutable once set; may be removed."""

    devices: DeviceAllocationResult | None = Field(
        None, description="Devices is the result of allocating devices."
    )
    node_selector: NodeSelector | None = Field(
        None,
        description="NodeSelector defines where the allocated resources are available. If "
        "unset, they are available everywhere.",
    )
    allocation_timestamp: Time | None = Field(
        None,
        description="AllocationTimestamp stores the time when the resources were allocated. "
        "Binding conditions time out measured from it.",
    )


class ResourceClaimConsumerReference(APIModel):
    """An object that uses the claim, typically a pod."""

    api_group: str | None = Field(
        None,
        description="APIGroup is the group for the resource being referenced. It is empty for "
        "the core API.",
    )
    resource: str = Field(
        description="Resource is the type of resource being referenced, for example pods."
    )
    name: str = Field(description="Name is the name of the resource being referenced.")
    uid: str = Field(description="UID identifies exactly one incarnation of the resource.")


class NetworkDeviceData(APIModel):
    """Network-related details of an allocated device."""

    interface_name: str | None = Field(
        None,
        description="InterfaceName specifies the name of the network interface associated with "
        f"the allocated device. At most {NETWORK_INTERFACE_NAME_MAX} characters.",
    )
    ips: list[str] | None = Field(
        None,
        description="IPs lists the network addresses assigned to the device's network "
        "interface, in CIDR form (e.g. 192.0.2.5/24 or 2001:db8::5/64). At most "
        f"{NETWORK_IPS_MAX}.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    hardware_address: str | None = Field(
        None,
        description="HardwareAddress represents the hardware address (e.g. MAC address) of the "
        f"device's network interface. At most {NETWORK_HARDWARE_ADDRESS_MAX} characters.",
    )


class AllocatedDeviceStatus(APIModel):
    """The status of one allocated device, reported by its driver or its attach flow."""

    driver: str = Field(
        description="Driver specifies the name of the DRA driver whose kubelet plugin should be "
        "invoked to process the allocation once the claim is needed on a node."
    )
    pool: str = Field(
        description="This name together with the driver name and the device name field "
        "identify which device was allocated."
    )
    device: str = Field(
        description="Device references one device instance via its name in the driver's "
        "resource pool. It must be a DNS label."
    )
    share_id: str | None = Field(
        None,
        alias="shareID",
        description="ShareID uniquely identifies an individual allocation share of the device.",
    )
    node_name: str | None = Field(
        None,
        description="NodeName is the node the device needs to be attached to (KEP-5007 fabric "
        "devices); set with the kubernetes.io/needs-attaching condition.",
    )
    conditions: list[Condition] | None = Field(
        None,
        description="Conditions contains the latest observation of the device's state, e.g. "
        f"{NEEDS_ATTACHING}, {IS_ATTACHED} or {ATTACH_FAILED} for fabric devices, or the "
        "device's binding conditions. At most "
        f"{DEVICE_CONDITIONS_MAX}.",
        json_schema_extra=CONDITIONS_SCHEMA_EXTRA,
    )
    data: RawObject | None = Field(
        None,
        description="Data contains arbitrary driver-specific data. The length of the serialized "
        "JSON object must not exceed 10 Ki.",
    )
    network_data: NetworkDeviceData | None = Field(
        None, description="NetworkData contains network-related information specific to the device."
    )


class ResourceClaimStatus(APIModel):
    """Whether the claim is allocated, and who uses it."""

    allocation: AllocationResult | None = Field(
        None, description="Allocation is set once the claim has been allocated successfully."
    )
    reserved_for: list[ResourceClaimConsumerReference] | None = Field(
        None,
        description="ReservedFor indicates which entities are currently allowed to use the claim. "
        "A Pod which references a ResourceClaim which is not reserved for that Pod will not be "
        f"started. May only be set together with an allocation. At most {RESERVED_FOR_MAX}.",
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["uid"],
        },
    )
    devices: list[AllocatedDeviceStatus] | None = Field(
        None,
        description="Devices contains the status of each device allocated for this claim, as "
        "reported by the driver or, for fabric devices, by the attach flow. Each entry must "
        "correspond to an allocated device.",
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["driver", "device", "pool", "shareID"],
        },
    )


class ResourceClaim(KindModel):
    """A request for devices for workloads; its status says what has been allocated."""

    spec: ResourceClaimSpec = Field(
        description="Spec describes what is being requested and how to configure it. The spec "
        "is immutable."
    )
    status: ResourceClaimStatus | None = Field(
        None,
        description="Status describes whether the claim is ready to use and what has been "
        "allocated; written through the status subresource.",
    )


# -- defaults -----------------------------------------------------------------------------------


def set_claim_spec_defaults(spec: dict[str, Any]) -> None:
    """Upstream's defaults, on the JSON form of a spec: allocationMode ExactCount, count 1 in
    that mode, toleration operator Equal. Leaves malformed parts alone for validation."""
    devices = spec.get("devices")
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for request in requests if isinstance(requests, list) else []:
        if not isinstance(request, dict):
            continue
        exactly = request.get("exactly")
        if isinstance(exactly, dict):
            _default_request(exactly)
        subrequests = request.get("firstAvailable")
        for sub in subrequests if isinstance(subrequests, list) else []:
            if isinstance(sub, dict):
                _default_request(sub)


def _default_request(request: dict[str, Any]) -> None:
    if request.get("allocationMode") is None:
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and request.get("count") is None:
        request["count"] = 1
    tolerations = request.get("tolerations")
    for toleration in tolerations if isinstance(tolerations, list) else []:
        if isinstance(toleration, dict) and toleration.get("operator") is None:
            toleration["operator"] = "Equal"

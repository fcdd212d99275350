"""``resource.k8s.io/v1`` ResourceSlice, with the KEP-5234 mixins.

The upstream v1 shape (devices, shared counters, node selection, taints, binding
conditions, consumable capacity) plus ``spec.mixins`` and the ``includes`` references of
devices, counter sets and counter consumptions. ``mixins.flatten_slice`` turns a slice
into the same slice written without mixins.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..base import APIModel
from ..core.nodeselector import NodeSelector
from ..meta import KindModel
from .device import (
    ATOMIC,
    Counter,
    CounterSet,
    DeviceAttribute,
    DeviceCapacity,
    DeviceCounterConsumption,
    DeviceTaint,
)

_ATTRIBUTES = (
    "Attributes defines the set of attributes, by qualified name: attributes of the driver's "
    "own domain are listed without the domain prefix, all others with it."
)
_CAPACITY = (
    "Capacity defines the set of capacities, by qualified name: capacities of the driver's own "
    "domain are listed without the domain prefix, all others with it."
)


class ResourcePool(APIModel):
    """The pool a slice belongs to; a pool may be published in several slices."""

    name: str = Field(
        description="Name is used to identify the pool. For node-local devices, this is often "
        "the node name. It must be one or more DNS subdomains separated by slashes, at most 253 "
        "characters. This field is immutable."
    )
    generation: int = Field(
        description="Generation tracks the change in a pool over time. Whenever a driver changes "
        "something about one or more of the resources in a pool, it must change the generation "
        "in all ResourceSlices which are part of that pool. Consumers of ResourceSlices should "
        "only consider resources from the pool with the highest generation number. Must be "
        "greater than or equal to 0."
    )
    resource_slice_count: int = Field(
        description="ResourceSliceCount is the total number of ResourceSlices in the pool at "
        "this generation number. Must be greater than zero. Consumers can use this to check "
        "whether they have seen all ResourceSlices belonging to the same pool."
    )


class Device(APIModel):
    """One device instance; its attributes and capacity may come partly from device mixins."""

    name: str = Field(
        description="Name is unique identifier among all devices managed by the driver in the "
        "pool. It must be a DNS label."
    )
    attributes: dict[str, DeviceAttribute] | None = Field(
        None,
        description=_ATTRIBUTES + " Attributes set here override those of included mixins. "
        "Together with capacity, at most 32 once the mixins are applied.",
    )
    capacity: dict[str, DeviceCapacity] | None = Field(
        None,
        description=_CAPACITY + " Capacities set here override those of included mixins. "
        "Together with attributes, at most 32 once the mixins are applied.",
    )
    consumes_counters: list[DeviceCounterConsumption] | None = Field(
        None,
        description="ConsumesCounters defines a list of references to sharedCounters and the set "
        "of counters that the device will consume from those counter sets. At most 4 entries, "
        "one per counter set.",
        json_schema_extra=ATOMIC,
    )
    node_name: str | None = Field(
        None,
        description="NodeName identifies the node where the device is available. Only allowed, "
        "and then exactly one of nodeName, nodeSelector and allNodes is required, when the "
        "slice sets perDeviceNodeSelection.",
    )
    node_selector: NodeSelector | None = Field(
        None,
        description="NodeSelector defines the nodes where the device is available; it must have "
        "exactly one term. Only allowed when the slice sets perDeviceNodeSelection.",
    )
    all_nodes: bool | None = Field(
        None,
        description="AllNodes indicates that all nodes have access to the device; must be true "
        "if set. Only allowed when the slice sets perDeviceNodeSelection.",
    )
    taints: list[DeviceTaint] | None = Field(
        None,
        description="If specified, these are the driver-defined taints. At most 4 taints.",
        json_schema_extra=ATOMIC,
    )
    binds_to_node: bool | None = Field(
        None,
        description="BindsToNode indicates if the usage of an allocation involving this device "
        "has to be limited to exactly the node that was chosen when allocating the claim.",
    )
    binding_conditions: list[str] | None = Field(
        None,
        description="BindingConditions defines the conditions for proceeding with binding: all "
        "of them must be set to True in the claim's device status before the pod is bound. At "
        "most 4, each a condition type in label-name form; requires bindingFailureConditions.",
        json_schema_extra=ATOMIC,
    )
    binding_failure_conditions: list[str] | None = Field(
        None,
        description="BindingFailureConditions defines the conditions for binding failure: if "
        "any is True, binding fails and the allocation is retried. At most 4, none of them also "
        "in bindingConditions; requires bindingConditions.",
        json_schema_extra=ATOMIC,
    )
    allow_multiple_allocations: bool | None = Field(
        None,
        description="AllowMultipleAllocations marks whether the device is allowed to be "
        "allocated to multiple DeviceRequests; its capacity then becomes consumable, with "
        "per-capacity requestPolicy.",
    )
    includes: list[str] | None = Field(
        None,
        description="Includes defines a list of references to device mixins "
        "(spec.mixins.device) of the same slice. Their attributes and capacities are added to "
        "the device in order: on conflicts the last mixin listed wins, and attributes and "
        "capacities set on the device always win. At most 8 includes.",
        json_schema_extra=ATOMIC,
    )


class DeviceMixin(APIModel):
    """Attributes and capacities that devices of the slice can include."""

    name: str = Field(
        description="Name is a unique identifier among all device mixins in the ResourceSlice. "
        "It must be a DNS label."
    )
    attributes: dict[str, DeviceAttribute] | None = Field(
        None,
        description=_ATTRIBUTES + " Counts towards the 4096 attributes and capacities of the "
        "slice.",
    )
    capacity: dict[str, DeviceCapacity] | None = Field(
        None,
        description=_CAPACITY + " Counts towards the 4096 attributes and capacities of the slice.",
    )


class CounterSetMixin(APIModel):
    """Counters that counter sets of the slice can include."""

    name: str = Field(
        description="Name is a unique identifier among all counter set mixins in the "
        "ResourceSlice. It must be a DNS label."
    )
    counters: dict[str, Counter] = Field(
        description="Counters defines the set of counters for this mixin, by name (DNS labels). "
        "Counts towards the 256 counters of the slice."
    )


class DeviceCounterConsumptionMixin(APIModel):
    """A pattern of counter consumption; the counter set is named where it is included."""

    name: str = Field(
        description="Name is a unique identifier among all device counter consumption mixins "
        "in the ResourceSlice. It must be a DNS label."
    )
    counters: dict[str, Counter] = Field(
        description="Counters defines a set of counters that a device will consume from a "
        "counter set. Counts towards the 2048 consumed counters of the slice."
    )


class ResourceSliceMixins(APIModel):
    """Named pieces that devices, counter sets and counter consumptions include by reference."""

    device: list[DeviceMixin] | None = Field(
        None,
        description="Device represents a list of device mixins, i.e. a collection of shared "
        "attributes and capacities that an actual device can include. At most 128.",
        json_schema_extra=ATOMIC,
    )
    counter_set: list[CounterSetMixin] | None = Field(
        None,
        description="CounterSet represents a list of counter set mixins, i.e. a collection of "
        "counters that a CounterSet can include. At most 32.",
        json_schema_extra=ATOMIC,
    )
    device_counter_consumption: list[DeviceCounterConsumptionMixin] | None = Field(
        None,
        description="DeviceCounterConsumption represents a list of counter consumption mixins, "
        "each a set of counters that a device consumes from a counter set. At most 128.",
        json_schema_extra=ATOMIC,
    )


class ResourceSliceSpec(APIModel):
    """The information published by the driver in one ResourceSlice."""

    driver: str = Field(
        description="Driver indicates the name of the DRA driver which is responsible for "
        "managing the devices in this slice. It must be a DNS subdomain of at most 63 "
        "characters, in lower case. This field is immutable."
    )
    pool: ResourcePool = Field(
        description="Pool describes the pool that this ResourceSlice belongs to."
    )
    node_name: str | None = Field(
        None,
        description="NodeName identifies the node which provides the resources in this pool. "
        "Exactly one of nodeName, nodeSelector, allNodes and perDeviceNodeSelection must be "
        "set. This field is immutable.",
    )
    node_selector: NodeSelector | None = Field(
        None,
        description="NodeSelector defines which nodes have access to the resources in the pool, "
        "when that pool is not limited to a single node. Must use exactly one term.",
    )
    all_nodes: bool | None = Field(
        None,
        description="AllNodes indicates that all nodes have access to the resources in the pool. "
        "Must be true if set.",
    )
    per_device_node_selection: bool | None = Field(
        None,
        description="PerDeviceNodeSelection defines whether the access from nodes to resources "
        "in the pool is set on the ResourceSlice level or on each device (nodeName, "
        "nodeSelector or allNodes of the device). Must be true if set.",
    )
    devices: list[Device] | None = Field(
        None,
        description="Devices lists some or all of the devices in this pool. At most 128.",
        json_schema_extra=ATOMIC,
    )
    shared_counters: list[CounterSet] | None = Field(
        None,
        description="SharedCounters defines a list of counter sets, each of which has a name "
        "and a list of counters available; devices of the slice consume from them. At most 32 "
        "counter sets and 256 counters across counter sets and counter set mixins.",
        json_schema_extra=ATOMIC,
    )
    mixins: ResourceSliceMixins | None = Field(
        None,
        description="Mixins defines the mixins available for devices, counter sets and counter "
        "consumptions in the ResourceSlice (KEP-5234).",
    )


class ResourceSlice(KindModel):
    """ResourceSlice represents one or more resources in a pool of similar resources, managed
    by a common driver. A pool may span more than one ResourceSlice."""

    spec: ResourceSliceSpec = Field(
        description="Contains the information published by the driver. Changing the spec "
        "automatically increments the metadata.generation number."
    )


def set_taint_times(spec: dict[str, Any], now: str, old: dict[str, Any] | None = None) -> None:
    """Set ``timeAdded`` on device taints that have none, in the JSON form of a slice spec.

    A taint that the same device of ``old`` (the stored spec) already had with the same key,
    value and effect keeps its time, so re-sending a slice without the times is not a change;
    any other taint gets ``now``. Tolerates ill-typed input (validation reports it later).
    """
    known: dict[tuple[Any, ...], Any] = {}
    for name, taint in _taints(old or {}):
        if taint.get("timeAdded"):
            known.setdefault(_taint_key(name, taint), taint["timeAdded"])
    for name, taint in _taints(spec):
        if not taint.get("timeAdded"):
            taint["timeAdded"] = known.get(_taint_key(name, taint), now)


def _taint_key(device: Any, taint: dict[str, Any]) -> tuple[Any, ...]:
    return (device, taint.get("key"), taint.get("value"), taint.get("effect"))


def _taints(spec: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    """(device name, taint) for every well-formed taint in ``spec``."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    out = []
    for device in devices if isinstance(devices, list) else ():
        taints = device.get("taints") if isinstance(device, dict) else None
        for taint in taints if isinstance(taints, list) else ():
            if isinstance(taint, dict):
                out.append((device.get("name"), taint))
    return out

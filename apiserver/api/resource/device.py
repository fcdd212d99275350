"""Device building blocks shared by slices, patches and claims: attributes, capacity, counters,
taints and selectors."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..base import APIModel, Quantity, Time

ATOMIC: dict[str, Any] = {"x-kubernetes-list-type": "atomic"}
"""The OpenAPI marker of a list replaced as a whole by server-side apply."""


class DeviceAttribute(APIModel):
    """Exactly one of int, bool, string, version, ints, bools, strings or versions must be set.

    The list forms are upstream's ``DRAListTypeAttributes`` shape (Kubernetes 1.36+)."""

    int_: int | None = Field(None, alias="int", description="IntValue is a number.")
    bool_: bool | None = Field(None, alias="bool", description="BoolValue is a true/false value.")
    string: str | None = Field(
        None, description="StringValue is a string. Must not be longer than 64 characters."
    )
    version: str | None = Field(
        None,
        description="VersionValue is a semantic version according to semver.org spec 2.0.0. "
        "Must not be longer than 64 characters.",
    )
    ints: list[int] | None = Field(
        None,
        description="IntValues is a non-empty list of numbers.",
        json_schema_extra=ATOMIC,
    )
    bools: list[bool] | None = Field(
        None,
        description="BoolValues is a non-empty list of true/false values.",
        json_schema_extra=ATOMIC,
    )
    strings: list[str] | None = Field(
        None,
        description="StringValues is a non-empty list of strings. Each string must not be "
        "longer than 64 characters.",
        json_schema_extra=ATOMIC,
    )
    versions: list[str] | None = Field(
        None,
        description="VersionValues is a non-empty list of semantic versions according to "
        "semver.org spec 2.0.0. Each version string must not be longer than 64 characters.",
        json_schema_extra=ATOMIC,
    )


class NullValue(APIModel):
    """Marks an intentionally empty attribute: the attribute is removed from the device."""


class NullableDeviceAttribute(DeviceAttribute):
    """A DeviceAttribute that may instead be null: exactly one field must be set."""

    null: NullValue | None = Field(
        None,
        description="If set, the attribute is removed from matching devices instead of overridden.",
    )


class CapacityRequestPolicyRange(APIModel):
    """A range of amounts a request may consume: from min up to max, in steps of step."""

    min: Quantity = Field(
        description="Min specifies the minimum capacity allowed for a consumption request. It "
        "must be greater than or equal to zero and at most the capacity value; the policy's "
        "default must be at least min."
    )
    max: Quantity | None = Field(
        None,
        description="Max defines the upper limit for capacity that can be requested. It must be "
        "at most the capacity value; min and the policy's default must be at most max.",
    )
    step: Quantity | None = Field(
        None,
        description="Step defines the step size between valid amounts within the range: max (if "
        "set) and the policy's default must be min plus a multiple of step, and min + step must "
        "be at most the capacity value.",
    )


class CapacityRequestPolicy(APIModel):
    """How much of a shared capacity a request consumes, and which amounts it may ask for."""

    default: Quantity | None = Field(
        None,
        description="Default specifies how much of this capacity is consumed by a request that "
        "does not ask for it. Required when validValues or validRange is set.",
    )
    valid_values: list[Quantity] | None = Field(
        None,
        description="ValidValues defines the acceptable amounts, in ascending order, at most 10, "
        "each at most the capacity value; default must be one of them. A request between two "
        "values consumes the next larger one. Only one of validValues and validRange may be set.",
        json_schema_extra=ATOMIC,
    )
    valid_range: CapacityRequestPolicyRange | None = Field(
        None,
        description="ValidRange defines an acceptable range of amounts; default must lie in it. "
        "A request is rounded up to min and then to the next step.",
    )


class DeviceCapacity(APIModel):
    """Describes a device's capacity."""

    value: Quantity = Field(
        description="Value defines how much of a certain capacity that device has."
    )
    request_policy: CapacityRequestPolicy | None = Field(
        None,
        description="RequestPolicy defines how this capacity is consumed when the device is "
        "allocated to several requests at once. Only allowed on devices with "
        "allowMultipleAllocations set to true.",
    )


class Counter(APIModel):
    """A named amount, offered by a counter set or consumed by a device."""

    value: Quantity = Field(
        description="Value defines how much of a certain device counter is available."
    )


class CounterSet(APIModel):
    """A named set of counters that devices draw from, e.g. the memory of a partitionable GPU."""

    name: str = Field(
        description="Name defines the name of the counter set. It must be a DNS label, unique "
        "among the counter sets of the slice."
    )
    counters: dict[str, Counter] | None = Field(
        None,
        description="Counters defines the set of counters for this CounterSet, by name (DNS "
        "labels). Counters from included mixins are added; counters set here override them. "
        "The set must have at least one counter once its mixins are applied.",
    )
    includes: list[str] | None = Field(
        None,
        description="Includes defines a list of references to counter set mixins "
        "(spec.mixins.counterSet) of the same slice. Their counters are added to this set in "
        "order: on conflicts the last mixin listed wins, and counters set on the CounterSet "
        "always win. At most 8 includes.",
        json_schema_extra=ATOMIC,
    )


class DeviceCounterConsumption(APIModel):
    """The counters a device consumes from one counter set when it is allocated."""

    counter_set: str = Field(
        description="CounterSet is the name of the counter set, in the same slice, from which "
        "the counters are consumed."
    )
    counters: dict[str, Counter] | None = Field(
        None,
        description="Counters defines the counters that will be consumed by the device, by name; "
        "each must exist in the counter set. Counters from included mixins are added; counters "
        "set here override them. At least one counter is required once mixins are applied.",
    )
    includes: list[str] | None = Field(
        None,
        description="Includes defines a list of references to device counter consumption "
        "mixins (spec.mixins.deviceCounterConsumption) of the same slice. Their counters are "
        "added in order: on conflicts the last mixin listed wins, and counters set here always "
        "win. At most 4 includes.",
        json_schema_extra=ATOMIC,
    )


DeviceTaintEffect = Literal["None", "NoSchedule", "NoExecute"]


class DeviceTaint(APIModel):
    """A taint on a device: claims that do not tolerate it cannot be allocated the device."""

    key: str = Field(description="The taint key to be applied to a device. Must be a label name.")
    value: str | None = Field(
        None, description="The taint value corresponding to the taint key. Must be a label value."
    )
    effect: DeviceTaintEffect = Field(
        description="The effect of the taint on claims that do not tolerate the taint and "
        "through such claims on the pods using them: None (only reported), NoSchedule (no new "
        "allocations) or NoExecute (also evicts pods that use the device)."
    )
    time_added: Time | None = Field(
        None, description="TimeAdded represents the time at which the taint was added."
    )


class CELDeviceSelector(APIModel):
    """A CEL expression over a device; it must evaluate to true for the device to be selected."""

    expression: str = Field(
        description="Expression is a CEL expression which evaluates a single device. It must "
        "evaluate to true when the device under consideration satisfies the desired criteria, "
        "and false when it does not. The variable `device` has fields driver, attributes and "
        "capacity. The length of the expression must be smaller or equal to 10 Ki."
    )


class DeviceSelector(APIModel):
    """Must be satisfied for each device that is considered."""

    cel: CELDeviceSelector | None = Field(
        None, description="CEL contains a CEL expression for selecting a device."
    )

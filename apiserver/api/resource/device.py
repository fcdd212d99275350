"""Device building blocks shared by slices, patches and claims: attributes, capacity, selectors."""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel, Quantity


class DeviceAttribute(APIModel):
    """Exactly one of int, bool, string or version must be set."""

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


class NullValue(APIModel):
    """Marks an intentionally empty attribute: the attribute is removed from the device."""


class NullableDeviceAttribute(DeviceAttribute):
    """A DeviceAttribute that may instead be null: exactly one field must be set."""

    null: NullValue | None = Field(
        None,
        description="If set, the attribute is removed from matching devices instead of overridden.",
    )


class DeviceCapacity(APIModel):
    """Describes a device's capacity."""

    value: Quantity = Field(
        description="Value defines how much of a certain capacity that device has."
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

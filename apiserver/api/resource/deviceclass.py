"""``resource.k8s.io/v1`` DeviceClass: a vendor- or admin-defined kind of device that claims ask for.

Also home of the opaque driver configuration, which classes and claims share.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, WithJsonSchema

from ..base import APIModel
from ..meta import KindModel
from .device import DeviceSelector

DEVICE_CLASS_SELECTORS_MAX = 32
DEVICE_CLASS_CONFIG_MAX = 32
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024

RawObject = Annotated[
    Any,
    WithJsonSchema({"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
]
"""Arbitrary JSON kept as sent; validation requires an object and bounds its size."""


class OpaqueDeviceConfiguration(APIModel):
    """Configuration for a device in a format defined by its driver."""

    driver: str = Field(
        description="Driver is used to determine which kubelet plugin needs to be passed these "
        "configuration parameters. An admission policy provided by the driver developer could "
        "use this to decide whether it needs to validate them. Must be a DNS subdomain and "
        "should end with a DNS domain owned by the vendor of the driver. At most 63 characters."
    )
    parameters: RawObject = Field(
        description="Parameters can contain arbitrary data. It is the responsibility of the "
        "driver developer to handle validation and versioning. Typically this includes "
        "apiVersion and kind to support different versions and types. The length of the "
        "serialized JSON object must not exceed 10 Ki."
    )


class DeviceClassConfiguration(APIModel):
    """Configuration applied to every device of the class."""

    opaque: OpaqueDeviceConfiguration | None = Field(
        None, description="Opaque provides driver-specific configuration parameters."
    )


class DeviceClassSpec(APIModel):
    """Which devices belong to the class, and how they are configured."""

    selectors: list[DeviceSelector] | None = Field(
        None,
        description="Each selector must be satisfied by a device which is claimed via this "
        f"class. At most {DEVICE_CLASS_SELECTORS_MAX} selectors.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    config: list[DeviceClassConfiguration] | None = Field(
        None,
        description="Config defines configuration parameters that apply to each device that is "
        "claimed via this class. Some classes may potentially be satisfied by multiple drivers, "
        "so each instance of a vendor configuration applies to exactly one driver. They are "
        "passed to the driver, but are not considered while allocating the claim. At most "
        f"{DEVICE_CLASS_CONFIG_MAX} entries.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    extended_resource_name: str | None = Field(
        None,
        description="ExtendedResourceName is the extended resource name for the devices of this "
        "class. The devices of this class can be used to satisfy a pod's extended resource "
        "requests. It has the same format as the name of a pod's extended resource, and must "
        "be unique among all device classes in the cluster. If unset, the implicit name is "
        "deviceclass.resource.kubernetes.io/<device class name>.",
    )


class DeviceClass(KindModel):
    """A class of devices, with selectors and configuration that claims referring to it get."""

    spec: DeviceClassSpec = Field(
        description="Spec defines what can be allocated and how to configure it."
    )

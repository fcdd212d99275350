"""``resource.k8s.io/v1alpha3`` Device: one device as the cluster offers it, read-only.

Computed by the server, never written by clients: the device of a ResourceSlice with its
KEP-5234 mixins applied and then every matching KEP-5027 ResourceSlicePatch merged in,
together with where it comes from (driver, pool, slice, nodes) and which patches touched
it. This is the "full picture" that the KEP says users otherwise have to assemble from
slices and patches themselves.

Naming: ``<slice name>.<device name>`` (a slice name is a DNS subdomain, a device name a
DNS label, so the last label is the device and the name is unambiguous); when that is longer
than 253 characters, ``<device name>.<first 16 hex digits of SHA-256 of "slice/device">``.
"""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel
from ..core.nodeselector import NodeSelector
from ..meta import KindModel
from .device import ATOMIC, DeviceAttribute, DeviceCapacity, DeviceCounterConsumption, DeviceTaint
from .resourceslice import ResourcePool


class DevicePool(ResourcePool):
    """The pool of a device, as its slice describes it (named apart from the ResourcePool
    kind served in the same group-version)."""


class DevicePatchReference(APIModel):
    """A ResourceSlicePatch that matches the device, in the order patches take precedence."""

    name: str = Field(description="Name of the ResourceSlicePatch.")
    priority: int = Field(description="Its priority; 0 when the patch sets none.")
    attributes: list[str] | None = Field(
        None,
        description="Attributes whose value on this device this patch decides (set, or removed "
        "by a null entry), by the names the patch uses.",
        json_schema_extra=ATOMIC,
    )
    capacity: list[str] | None = Field(
        None,
        description="Capacities whose value on this device this patch decides.",
        json_schema_extra=ATOMIC,
    )
    taints: list[str] | None = Field(
        None,
        description="Taints this patch put on the device (spec.taints), written "
        "key=value:Effect, or key:Effect for a taint without value.",
        json_schema_extra=ATOMIC,
    )


class DeviceSelectorError(APIModel):
    """A patch whose selector failed for this device, which the patch therefore skips."""

    patch: str = Field(description="Name of the ResourceSlicePatch.")
    selector: str = Field(
        description="The selector that failed: its field path in the patch, or in the "
        "DeviceClass the patch names."
    )
    message: str = Field(description="The evaluation error.")


class DeviceSpec(APIModel):
    """The device after mixins and patches, and where it comes from."""

    driver: str = Field(description="The DRA driver that publishes the device.")
    pool: DevicePool = Field(description="The pool of the device, as its slice describes it.")
    resource_slice_name: str = Field(description="The ResourceSlice that publishes the device.")
    device: str = Field(description="The name of the device within its pool.")
    node_name: str | None = Field(
        None, description="The node that provides the device, for node-local devices."
    )
    node_selector: NodeSelector | None = Field(
        None, description="The nodes that have access to the device, when selected by labels."
    )
    all_nodes: bool | None = Field(None, description="True when every node can use the device.")
    attributes: dict[str, DeviceAttribute] | None = Field(
        None,
        description="Attributes after mixins and patches; attributes of the driver's own "
        "domain are listed without the domain prefix.",
    )
    capacity: dict[str, DeviceCapacity] | None = Field(
        None, description="Capacities after mixins and patches."
    )
    consumes_counters: list[DeviceCounterConsumption] | None = Field(
        None, description="Counters the device consumes, after mixins.", json_schema_extra=ATOMIC
    )
    taints: list[DeviceTaint] | None = Field(
        None,
        description="The taints of the device: the driver's own and those matching patches add "
        "(status.patchedBy says which patch added which).",
        json_schema_extra=ATOMIC,
    )
    binds_to_node: bool | None = Field(
        None, description="Whether an allocation of the device is limited to the chosen node."
    )
    binding_conditions: list[str] | None = Field(
        None, description="Conditions that must hold before binding.", json_schema_extra=ATOMIC
    )
    binding_failure_conditions: list[str] | None = Field(
        None, description="Conditions that make binding fail.", json_schema_extra=ATOMIC
    )
    allow_multiple_allocations: bool | None = Field(
        None, description="Whether several requests may share the device."
    )


class DeviceStatus(APIModel):
    """Which patches shaped the device."""

    patched_by: list[DevicePatchReference] | None = Field(
        None,
        description="Every ResourceSlicePatch whose filter matches the device, highest "
        "precedence first (higher priority, then older, then by name).",
        json_schema_extra=ATOMIC,
    )
    selector_errors: list[DeviceSelectorError] | None = Field(
        None,
        description="Patches that skip the device because a selector failed to evaluate for it.",
        json_schema_extra=ATOMIC,
    )


class Device(KindModel):
    """A device as the cluster offers it: its slice's device with mixins and patches applied.
    Computed by the server; read-only."""

    spec: DeviceSpec = Field(description="The device and where it comes from.")
    status: DeviceStatus | None = Field(None, description="Which patches shaped the device.")

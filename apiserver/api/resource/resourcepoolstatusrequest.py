"""``resource.k8s.io/v1alpha1`` ResourcePoolStatusRequest (KEP-5677): pool availability on request."""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel, Time
from ..meta import CONDITIONS_SCHEMA_EXTRA, Condition, KindModel

LIMIT_DEFAULT = 100
LIMIT_MAX = 1000
VALIDATION_ERRORS_MAX = 10
VALIDATION_ERROR_MAX_LENGTH = 256


class ResourcePoolStatusRequestSpec(APIModel):
    """Which pools to report on. Immutable after creation: delete and recreate for fresh data."""

    driver: str = Field(
        description="Driver whose pools are reported. Required; bounds the size of the answer."
    )
    pool_name: str | None = Field(
        None, description="If set, only the pool with this name is reported."
    )
    limit: int | None = Field(
        None,
        description=f"Maximum number of pools in the status. Defaults to {LIMIT_DEFAULT}, at most {LIMIT_MAX}.",
    )


class PoolStatus(APIModel):
    """Availability of one pool."""

    driver: str = Field(description="The DRA driver of the pool.")
    pool_name: str = Field(description="The pool name from the ResourceSlices.")
    node_name: str | None = Field(
        None, description="The node of a node-local pool; empty otherwise."
    )
    total_devices: int = Field(description="Devices in the newest generation of the pool.")
    allocated_devices: int = Field(description="Devices allocated to claims.")
    available_devices: int = Field(description="Devices that can be allocated now.")
    unavailable_devices: int = Field(
        0, description="Devices that cannot be allocated, e.g. tainted NoSchedule."
    )
    slice_count: int = Field(
        description="ResourceSlices seen in the newest generation of the pool."
    )
    generation: int = Field(description="The newest pool generation observed.")


class ResourcePoolStatusRequestStatus(APIModel):
    """The one-time answer, written by the controller."""

    observation_time: Time | None = Field(None, description="When the calculation was performed.")
    pools: list[PoolStatus] | None = Field(
        None,
        description="Pools matching the filter, sorted by driver then pool name, at most spec.limit.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    conditions: list[Condition] | None = Field(
        None,
        description="Processing state: Complete when the calculation is done, Failed when it cannot be.",
        json_schema_extra=CONDITIONS_SCHEMA_EXTRA,
    )
    validation_errors: list[str] | None = Field(
        None,
        description=f"Pool consistency problems found, at most {VALIDATION_ERRORS_MAX} of at most "
        f"{VALIDATION_ERROR_MAX_LENGTH} characters each.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    truncated: bool | None = Field(
        None, description="True if more pools matched than spec.limit allowed."
    )
    total_matching_pools: int | None = Field(
        None, description="Number of pools matching the filter, even if truncated."
    )


class ResourcePoolStatusRequest(KindModel):
    """A one-time request for the availability of a driver's device pools (like a CSR)."""

    spec: ResourcePoolStatusRequestSpec = Field(description="What to report on. Immutable.")
    status: ResourcePoolStatusRequestStatus | None = Field(
        None, description="The answer, set once by the controller through the status subresource."
    )

"""``resource.k8s.io/v1alpha3`` ResourcePoolStatusRequest: upstream's shape of KEP-5677.

Kubernetes 1.36 shipped the KEP as ``resource/v1alpha3`` (``k8s.io/api``), with its own
field names: ``status.poolCount`` where the seed says ``totalMatchingPools``, a
``validationError`` per pool where the seed lists ``validationErrors`` for the request,
``resourceSliceCount`` for ``sliceCount``, counts that are unset for a pool that could not
be validated, no ``observationTime``, ``truncated`` or ``ttlSecondsAfterComplete``. This
server stores the seed's ``v1alpha1`` and serves this version beside it, converted
(``resourcepoolstatusrequest_conversion``), so clients generated from ``k8s.io/api`` work.

Left out: ``spec.defaultPartitionTypeAttribute`` is in the schema but refused, as upstream
refuses it with its ``DRAPartitionableDevicesType`` feature gate off (this server computes
no partition summaries), and the status's ``partitionSummary`` and ``shareableSummary``
(which only that feature fills) are not served.
"""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel
from ..meta import CONDITIONS_SCHEMA_EXTRA, Condition, KindModel
from .resourcepoolstatusrequest import LIMIT_DEFAULT, LIMIT_MAX

VERSION = "v1alpha3"
POOLS_MAX = 1000
CONDITIONS_MAX = 10
VALIDATION_ERROR_MAX_BYTES = 256


class ResourcePoolStatusRequestSpec(APIModel):
    """Which pools to report on; immutable once created."""

    driver: str = Field(
        description="The DRA driver whose pools are reported (a DNS subdomain). Required."
    )
    pool_name: str | None = Field(
        None,
        description="If set, only the pool of this name is reported "
        '(DNS subdomains separated by "/").',
    )
    limit: int | None = Field(
        None,
        description=f"The most pools listed in the status: at least 1, at most {LIMIT_MAX},"
        f" {LIMIT_DEFAULT} if unset. When more pools match, len(status.pools) < status.poolCount.",
    )
    default_partition_type_attribute: str | None = Field(
        None,
        description="The attribute that groups partitionable devices for a partition summary."
        " Not supported by this server (the DRAPartitionableDevicesType feature): must be unset.",
    )


class PoolStatus(APIModel):
    """Availability of one pool."""

    driver: str = Field(description="The DRA driver of the pool.")
    pool_name: str = Field(description="The name of the pool.")
    generation: int = Field(description="The newest generation of the pool that was observed.")
    resource_slice_count: int | None = Field(
        None,
        description="ResourceSlices in that generation; may be unset when validationError is.",
    )
    total_devices: int | None = Field(
        None, description="Devices in the pool; may be unset when validationError is set."
    )
    allocated_devices: int | None = Field(
        None, description="Devices allocated to claims; may be unset when validationError is set."
    )
    available_devices: int | None = Field(
        None,
        description="Devices that can be allocated now: total - allocated - unavailable; may be"
        " unset when validationError is set.",
    )
    unavailable_devices: int | None = Field(
        None,
        description="Devices neither allocated nor available (tainted, for instance); may be"
        " unset when validationError is set.",
    )
    node_name: str | None = Field(
        None, description="The node of a node-local pool; unset for other pools."
    )
    validation_error: str | None = Field(
        None,
        description=f"Why the pool could not be fully validated (at most"
        f" {VALIDATION_ERROR_MAX_BYTES} bytes), e.g. slices of its generation still missing.",
    )


class ResourcePoolStatusRequestStatus(APIModel):
    """The one-time answer, written by the controller."""

    pool_count: int | None = Field(
        None, description="Pools that matched the request, listed or not. Required."
    )
    pools: list[PoolStatus] | None = Field(
        None,
        description="The first spec.limit matching pools, sorted by driver then pool name.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    conditions: list[Condition] | None = Field(
        None,
        description="Complete when the request was answered, Failed when it could not be.",
        json_schema_extra=CONDITIONS_SCHEMA_EXTRA,
    )


class ResourcePoolStatusRequest(KindModel):
    """A one-time request for the availability of a driver's device pools (like a CSR)."""

    spec: ResourcePoolStatusRequestSpec = Field(description="What to report on. Immutable.")
    status: ResourcePoolStatusRequestStatus | None = Field(
        None, description="The answer, set once by the controller through the status subresource."
    )

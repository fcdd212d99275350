"""``resource.k8s.io/v1alpha1`` ResourcePoolStatusRequest (KEP-5677): pool availability on request.

``spec.limit`` defaults to 100 and may be at most 1,000 (the numbers the KEP settled on);
object-size arithmetic says why 1,000 is safe. The worst case of one ``status.pools`` entry,
as compact JSON: the nine keys with their quotes and colons (131 bytes), a driver of 63
characters and a pool name and a node name of 253 each (575 bytes with quotes), six integers
(four counts, sliceCount, generation) of up to 19 digits (114), commas and braces (11,
counting the comma between entries): 831 bytes. So:

* 1,000 pools: 831,000 bytes (812 KiB);
* ``validationErrors``: 10 messages of 256 characters, 2,591 bytes with quotes and commas;
* conditions and the rest of the status (observationTime, truncated, totalMatchingPools):
  under 1 KiB; spec and server-set metadata (name, uid, managedFields): under 2 KiB;
* total below 0.84 MB: more than 700 KB under etcd's default request limit
  (``--max-request-bytes``, 1.5 MiB = 1,572,864 bytes), still 450 KB under it with
  annotations at their cap of 256 KiB, and far inside this server's 3 MiB request body
  limit, so a client can send the object back unchanged.

With full annotations the ceiling would be about 1,550 pools; 1,000 keeps a third of the
room in reserve. Realistic entries (counts of a few digits) are about 725 bytes.
"""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel, Time
from ..meta import CONDITIONS_SCHEMA_EXTRA, Condition, KindModel

LIMIT_DEFAULT = 100
LIMIT_MAX = 1000
VALIDATION_ERRORS_MAX = 10
VALIDATION_ERROR_MAX_LENGTH = 256
TTL_MAX = 2**31 - 1
"""``spec.ttlSecondsAfterComplete`` is an int32, like a Job's ``ttlSecondsAfterFinished``."""


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
    ttl_seconds_after_complete: int | None = Field(
        None,
        description="Seconds after the request completes (status.observationTime) at which it is "
        "deleted. 0 deletes it as soon as it is complete. If unset, the server's default "
        "applies (one hour unless configured otherwise).",
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

"""``resource.k8s.io/v1alpha3`` ResourcePool: one pool's availability, live and read-only.

Computed by the server, never written by clients: the counts a ResourcePoolStatusRequest
(KEP-5677) reports for a pool, with the same field names, kept current as claims and
slices change, so a watch shows availability move. Cluster-scoped; named
``<driver>.<pool name>`` (see ``apiserver.pools.names`` for names that do not fit).
"""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel
from ..core.nodeselector import NodeSelector
from ..meta import KindModel
from .resourcepoolstatusrequest import VALIDATION_ERROR_MAX_LENGTH


class ResourcePoolSpec(APIModel):
    """Which pool this is and where its devices are."""

    driver: str = Field(description="The DRA driver of the pool.")
    pool_name: str = Field(description="The pool name from the ResourceSlices.")
    node_name: str | None = Field(
        None,
        description="The node of a node-local pool: every device of the pool is on it. "
        "Empty otherwise.",
    )
    all_nodes: bool | None = Field(
        None, description="True when the pool's slices make their devices usable on every node."
    )
    node_selector: NodeSelector | None = Field(
        None,
        description="The nodes that can use the pool's devices, when all its slices select "
        "them with this one node selector.",
    )
    per_device_node_selection: bool | None = Field(
        None, description="True when each device of the pool says which nodes can use it."
    )


class ResourcePoolStatus(APIModel):
    """The pool's availability now; the same counts a ResourcePoolStatusRequest gives."""

    generation: int = Field(
        description="The newest pool generation observed; only its slices are counted."
    )
    slice_count: int = Field(description="ResourceSlices seen in the newest generation.")
    total_devices: int = Field(
        description="Distinct devices in the newest generation, after mixins and patches."
    )
    allocated_devices: int = Field(
        description="Devices allocated to claims or held by a reservation (a shared device "
        "counts once; admin-access allocations do not count)."
    )
    available_devices: int = Field(
        description="Devices that can be allocated now: total - allocated - unavailable."
    )
    unavailable_devices: int = Field(
        description="Devices not allocated that cannot be allocated now: tainted NoSchedule "
        "or NoExecute, or consuming a counter the allocated devices have used up."
    )
    incomplete: bool | None = Field(
        None,
        description="True while fewer slices than resourceSliceCount are published: the "
        "driver is still publishing, and the allocator does not use the pool.",
    )
    validation_errors: list[str] | None = Field(
        None,
        description="Pool consistency problems (duplicate device names, an incomplete pool, "
        f"slices that disagree), each at most {VALIDATION_ERROR_MAX_LENGTH} characters.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class ResourcePool(KindModel):
    """One device pool's availability: the counts a ResourcePoolStatusRequest reports for the
    pool, computed by the server and kept current as claims and slices change; read-only.
    Watch it to see availability move."""

    spec: ResourcePoolSpec = Field(description="Which pool this is and where its devices are.")
    status: ResourcePoolStatus = Field(description="The pool's availability now.")

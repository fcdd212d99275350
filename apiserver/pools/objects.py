"""The computed ResourcePool object of a pool (see ``api.resource.resourcepool``).

``PoolRecord`` is what the live view keeps per pool: its name and uid, where its devices
are (its node, or that every node, a node selector or each device says which), its ``PoolSummary`` (the counts a ResourcePoolStatusRequest gives) and when the view first
saw it. Two records are equal when the object would be the same but for its
resourceVersion, so an unchanged pool sends no event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..api.resource import ALL_NODES, NODE_NAME, NODE_SELECTOR, PER_DEVICE
from ..toolkit import JSON
from .gather import GatheredPool
from .summary import PoolSummary

KIND = "ResourcePool"


@dataclass(frozen=True)
class PoolRecord:
    name: str
    uid: str
    summary: PoolSummary
    placement: JSON
    """``nodeName``, ``allNodes``, ``nodeSelector`` or ``perDeviceNodeSelection``, or none
    when the pool's slices disagree."""
    created: str = field(compare=False)


def pool_placement(gathered: GatheredPool) -> JSON:
    """Where the pool's devices are, when its slices (those holding devices) agree."""
    placed = [s for s in gathered.slices if s.devices] or list(gathered.slices)
    kinds = {s.placement.kind for s in placed}
    if len(kinds) != 1:
        return {}
    kind = kinds.pop()
    if kind == NODE_NAME and gathered.node_name is not None:
        return {NODE_NAME: gathered.node_name}
    if kind == ALL_NODES:
        return {ALL_NODES: True}
    if kind == PER_DEVICE:
        return {PER_DEVICE: True}
    if kind == NODE_SELECTOR:
        selectors = [s.placement.node_selector for s in placed]
        if all(sel == selectors[0] for sel in selectors):
            return {NODE_SELECTOR: selectors[0]}
    return {}


def pool_object(record: PoolRecord, api_version: str, revision: int) -> JSON:
    summary = record.summary
    spec: JSON = {"driver": summary.driver, "poolName": summary.pool, **record.placement}
    if summary.node_name is not None:
        spec[NODE_NAME] = summary.node_name
    status: JSON = {
        "generation": summary.generation,
        "sliceCount": summary.slice_count,
        "totalDevices": summary.total,
        "allocatedDevices": summary.allocated,
        "availableDevices": summary.available,
        "unavailableDevices": summary.unavailable,
    }
    if summary.incomplete:
        status["incomplete"] = True
    if summary.errors:
        status["validationErrors"] = list(summary.errors)
    return {
        "apiVersion": api_version,
        "kind": KIND,
        "metadata": {
            "name": record.name,
            "uid": record.uid,
            "resourceVersion": str(revision),
            "creationTimestamp": record.created,
        },
        "spec": spec,
        "status": status,
    }

"""ResourcePool (``v1alpha3``, the live pool view): cluster-scoped and read-only.

Served over the live pool view's own store (get, list, watch; every write is 405).
``kubectl get resourcepools`` prints DRIVER, POOL, NODE and the counts a
ResourcePoolStatusRequest gives (TOTAL, ALLOCATED, AVAILABLE, UNAVAILABLE); ``-o wide`` adds
the generation, the slices and the pool's problems. Field selectors: ``spec.driver``,
``spec.poolName`` and ``spec.nodeName``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..api.resource import ResourcePool, placement_text
from ..machinery import READ_ONLY_VERBS, Column, FieldGetter, Strategy, path, string_at

VERSION = "v1alpha3"


def _node(obj: dict[str, Any]) -> str:
    return placement_text(obj.get("spec") or {})


def _problems(obj: dict[str, Any]) -> int:
    errors = (obj.get("status") or {}).get("validationErrors")
    return len(errors) if isinstance(errors, list) else 0


class ResourcePoolStrategy(Strategy[ResourcePool]):
    model = ResourcePool
    version = VERSION
    kind = "ResourcePool"
    plural = "resourcepools"
    singular = "resourcepool"
    verbs = READ_ONLY_VERBS
    columns: ClassVar[tuple[Column, ...]] = (
        Column("Driver", "string", string_at("spec", "driver"), "The driver of the pool."),
        Column("Pool", "string", string_at("spec", "poolName"), "The pool name."),
        Column("Node", "string", _node, "The node of a node-local pool."),
        Column("Total", "integer", path("status", "totalDevices"), "Devices in the pool."),
        Column("Allocated", "integer", path("status", "allocatedDevices"), "Devices allocated."),
        Column(
            "Available",
            "integer",
            path("status", "availableDevices"),
            "Devices that can be allocated now.",
        ),
        Column(
            "Unavailable",
            "integer",
            path("status", "unavailableDevices"),
            "Devices that cannot be allocated (tainted, or their counters used up).",
        ),
        Column(
            "Generation",
            "integer",
            path("status", "generation"),
            "The newest pool generation.",
            priority=1,
        ),
        Column(
            "Slices",
            "integer",
            path("status", "sliceCount"),
            "ResourceSlices of the newest generation.",
            priority=1,
        ),
        Column("Problems", "integer", _problems, "Pool consistency problems found.", priority=1),
    )
    extra_field_getters: ClassVar[dict[str, FieldGetter]] = {
        "spec.driver": string_at("spec", "driver"),
        "spec.poolName": string_at("spec", "poolName"),
        "spec.nodeName": string_at("spec", "nodeName"),
    }

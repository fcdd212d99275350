"""Index functions of ResourceSlices (by driver, pool and node) and of patches and classes."""

from __future__ import annotations

from collections.abc import Iterable

from .interface import JSON

BY_DRIVER = "driver"
BY_POOL = "pool"
BY_NODE = "node"


def _spec(obj: JSON) -> JSON:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def slice_driver(obj: JSON) -> Iterable[str]:
    driver = _spec(obj).get("driver")
    return (driver,) if isinstance(driver, str) else ()


def slice_pool(obj: JSON) -> Iterable[str]:
    """``driver/pool``: pool names are only unique per driver."""
    spec = _spec(obj)
    pool = spec.get("pool")
    name = pool.get("name") if isinstance(pool, dict) else None
    driver = spec.get("driver")
    if isinstance(name, str) and isinstance(driver, str):
        return (f"{driver}/{name}",)
    return ()


def slice_node(obj: JSON) -> Iterable[str]:
    """The node of a node-local slice, and the nodes its devices name one by one."""
    spec = _spec(obj)
    nodes = set()
    if isinstance(spec.get("nodeName"), str):
        nodes.add(spec["nodeName"])
    for device in spec.get("devices") or ():
        if isinstance(device, dict) and isinstance(device.get("nodeName"), str):
            nodes.add(device["nodeName"])
    return sorted(nodes)


SLICE_INDEXERS = {BY_DRIVER: slice_driver, BY_POOL: slice_pool, BY_NODE: slice_node}

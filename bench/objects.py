"""The benchmark's objects: ResourceSlicePatches of about 1 KB as the server stores them."""

from __future__ import annotations

from typing import Any

import orjson

from apiserver.api.resource import DRA_GROUP
from apiserver.kinds.resourceslicepatch import ResourceSlicePatchStrategy

RESOURCE = ResourceSlicePatchStrategy.for_group(DRA_GROUP).resource
COLLECTION_PATH = f"/apis/{RESOURCE.group}/{RESOURCE.version}/{RESOURCE.plural}"
NAME_MARKER = "__NAME__"
"""Stands for a unique name in a create body; the load generators replace it per request."""


def object_path(name: str) -> str:
    return f"{COLLECTION_PATH}/{name}"


def store_key(name: str) -> str:
    return RESOURCE.key(None, name)


def store_prefix() -> str:
    return RESOURCE.key_prefix(None)


def patch(name: str, index: int = 0) -> dict[str, Any]:
    """A realistic patch of about 1 KB once stored: a filter with a CEL selector, attributes, capacity."""
    return {
        "apiVersion": RESOURCE.group_version,
        "kind": RESOURCE.kind,
        "metadata": {"name": name},
        "spec": {
            "devices": {
                "filter": {
                    "driver": "gpu.example.com",
                    "pool": f"node-{index % 64:03d}",
                    "device": f"gpu-{index % 8}",
                    "selectors": [
                        {
                            "cel": {
                                "expression": "device.attributes['gpu.example.com'].model"
                                " == 'A100' && device.capacity['gpu.example.com']"
                                ".memory.compareTo(quantity('40Gi')) >= 0"
                            }
                        }
                    ],
                },
                "priority": index % 100,
                "attributes": {
                    "gpu.example.com/healthy": {"bool": True},
                    "gpu.example.com/firmware": {"version": "1.2.3"},
                },
                "capacity": {"gpu.example.com/slices": {"value": "7"}},
            }
        },
    }


def create_template() -> bytes:
    """A create body whose name is ``NAME_MARKER``."""
    return orjson.dumps(patch(NAME_MARKER))

"""KEP-5027 merge: a flattened device plus the patches that match it, in precedence order.

For each attribute and each capacity, the first patch that names it decides it (patches
come highest precedence first: higher priority, then older, then by name): a value
replaces the driver's, a ``null`` attribute entry removes it; a capacity entry replaces the
whole capacity (value and request policy). Patches name attributes fully qualified; on the
device, attributes of the driver's own domain are unqualified, so ``<driver>/x`` in a patch
is ``x`` on the device. The input device is never changed; a device no patch matches is
returned as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from .patches import CompiledPatch, local_name
from .state import JSON, PatchMark

__all__ = ["local_name", "merge"]


def merge(
    device: JSON, driver: str, patches: Sequence[CompiledPatch]
) -> tuple[JSON, tuple[PatchMark, ...]]:
    """The patched device and, per patch, what it decided."""
    if not patches:
        return device, ()
    attributes = dict(device.get("attributes") or {})
    capacity = dict(device.get("capacity") or {})
    decided_attributes: set[str] = set()
    decided_capacity: set[str] = set()
    marks = []
    for patch in patches:
        attribute_entries, capacity_entries = patch.entries(driver)
        won_attributes = []
        for name, key, value in attribute_entries:
            if key in decided_attributes:
                continue
            decided_attributes.add(key)
            won_attributes.append(name)
            if key != name:
                attributes.pop(name, None)  # the qualified spelling of an own-domain name
            if value is None:
                attributes.pop(key, None)
            else:
                attributes[key] = value
        won_capacity = []
        for name, key, value in capacity_entries:
            if key in decided_capacity:
                continue
            decided_capacity.add(key)
            won_capacity.append(name)
            if key != name:
                capacity.pop(name, None)
            capacity[key] = value
        marks.append(
            PatchMark(patch.name, patch.priority, tuple(won_attributes), tuple(won_capacity))
        )
    out = dict(device)
    if attributes or "attributes" in device:
        out["attributes"] = attributes
    if capacity or "capacity" in device:
        out["capacity"] = capacity
    return out, tuple(marks)

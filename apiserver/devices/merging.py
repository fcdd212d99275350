"""KEP-5027 merge: a flattened device plus the patches that match it, in precedence order.

Patches come highest precedence first: higher priority, then older, then by name.

Attributes and capacity: for each attribute and each capacity, the first patch that names
it decides it: a value replaces the driver's, a ``null`` attribute entry removes it; a
capacity entry replaces the whole capacity (value and request policy). Patches name
attributes fully qualified; on the device, attributes of the driver's own domain are
unqualified, so ``<driver>/x`` in a patch is ``x`` on the device.

Taints: the union of the device's own taints and those of every matching patch. A taint is
identified by its key and effect: of several with the same key and effect, the one from the
patch with the highest precedence is kept (its value and timeAdded), and a patch's taint
replaces the device's own. A patch can thus add taints and change the value of a taint the
device has, but never remove one. The device's own taints come first, then the patches' in
precedence order.

The input device is never changed; a device no patch matches is returned as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..toolkit import JSON
from .patches import CompiledPatch, Entry, local_name
from .state import PatchMark

__all__ = ["local_name", "merge", "taint_text"]


def taint_text(taint: JSON) -> str:
    """A taint as kubectl writes one: ``key=value:Effect``, or ``key:Effect`` without value."""
    value = taint.get("value")
    key = f"{taint.get('key', '')}={value}" if value else str(taint.get("key", ""))
    return f"{key}:{taint.get('effect', '')}"


def _identity(taint: JSON) -> tuple[Any, Any]:
    return (taint.get("key"), taint.get("effect"))


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
    patch_taints: dict[tuple[Any, Any], JSON] = {}
    marks = []
    for patch in patches:
        attribute_entries, capacity_entries = patch.entries(driver)
        won_attributes = _decide(attribute_entries, decided_attributes, attributes, nulls=True)
        won_capacity = _decide(capacity_entries, decided_capacity, capacity, nulls=False)
        won_taints = []
        for taint in patch.taints:
            identity = _identity(taint)
            if identity not in patch_taints:
                patch_taints[identity] = taint
                won_taints.append(taint_text(taint))
        marks.append(
            PatchMark(
                patch.name,
                patch.priority,
                tuple(won_attributes),
                tuple(won_capacity),
                tuple(won_taints),
            )
        )
    return _patched(device, attributes, capacity, patch_taints), tuple(marks)


def _decide(
    entries: tuple[Entry, ...], decided: set[str], values: JSON, *, nulls: bool
) -> list[str]:
    """Write into ``values`` the entries of one patch whose keys no earlier patch decided,
    and mark them decided; with ``nulls``, a ``None`` value removes its key. The names won,
    as the patch wrote them."""
    won = []
    for name, key, value in entries:
        if key in decided:
            continue
        decided.add(key)
        won.append(name)
        if key != name:
            values.pop(name, None)  # the qualified spelling of an own-domain name
        if value is None and nulls:
            values.pop(key, None)
        else:
            values[key] = value
    return won


def _patched(
    device: JSON, attributes: JSON, capacity: JSON, patch_taints: dict[tuple[Any, Any], JSON]
) -> JSON:
    """A copy of ``device`` with the merged attributes, capacity and taints."""
    out = dict(device)
    if attributes or "attributes" in device:
        out["attributes"] = attributes
    if capacity or "capacity" in device:
        out["capacity"] = capacity
    if patch_taints:
        own = [
            t
            for t in device.get("taints") or ()
            if not isinstance(t, dict) or _identity(t) not in patch_taints
        ]
        out["taints"] = own + list(patch_taints.values())
    return out

"""Device (``v1alpha3``, the computed device view): cluster-scoped and read-only.

Served over the device view's own store (get, list, watch; every write is 405). ``kubectl
get devices`` prints DRIVER, POOL, NODE, DEVICE and PATCHED-BY; ``-o wide`` adds a few
attributes and capacities, the taints and the slice. Field selectors: ``spec.driver``,
``spec.pool.name``, ``spec.nodeName``, ``spec.device`` and ``spec.resourceSliceName``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..api.resource import ComputedDevice as Device
from ..api.resource import placement_text
from ..machinery import READ_ONLY_VERBS, Column, FieldGetter, Strategy, string_at

VERSION = "v1alpha3"
SHOWN_ENTRIES = 4
"""Attributes (and capacities) printed in the wide view before the rest is summarised."""


def _node(obj: dict[str, Any]) -> str:
    return placement_text(obj.get("spec") or {})


def _patched_by(obj: dict[str, Any]) -> str:
    refs = (obj.get("status") or {}).get("patchedBy") or []
    return ",".join(str(r.get("name")) for r in refs if isinstance(r, dict))


def _taints(obj: dict[str, Any]) -> str:
    taints = (obj.get("spec") or {}).get("taints") or []
    shown = [f"{t.get('key')}:{t.get('effect')}" for t in taints if isinstance(t, dict)]
    return ",".join(shown) or "<none>"


def _attribute_text(value: Any) -> str:
    if not isinstance(value, dict):
        return "?"
    for kind in ("string", "int", "bool", "version"):
        if kind in value:
            shown = value[kind]
            return str(shown).lower() if isinstance(shown, bool) else str(shown)
    return "?"


def _entries(obj: dict[str, Any], field: str) -> str:
    entries = ((obj.get("spec") or {}).get(field)) or {}
    if not isinstance(entries, dict):
        return ""
    names = sorted(entries)
    if field == "attributes":
        shown = [f"{n}={_attribute_text(entries[n])}" for n in names[:SHOWN_ENTRIES]]
    else:
        shown = [f"{n}={(entries[n] or {}).get('value')}" for n in names[:SHOWN_ENTRIES]]
    more = len(names) - SHOWN_ENTRIES
    return ",".join(shown) + (f",+{more} more" if more > 0 else "")


class DeviceStrategy(Strategy[Device]):
    model = Device
    version = VERSION
    kind = "Device"
    plural = "devices"
    singular = "device"
    verbs = READ_ONLY_VERBS
    columns: ClassVar[tuple[Column, ...]] = (
        Column("Driver", "string", string_at("spec", "driver"), "The driver of the device."),
        Column("Pool", "string", string_at("spec", "pool", "name"), "The pool of the device."),
        Column("Node", "string", _node, "The node of a node-local device."),
        Column("Device", "string", string_at("spec", "device"), "The device name in its pool."),
        Column("Patched-By", "string", _patched_by, "Patches that match the device."),
        Column(
            "Attributes",
            "string",
            lambda obj: _entries(obj, "attributes"),
            "Some attributes after mixins and patches.",
            priority=1,
        ),
        Column(
            "Capacity",
            "string",
            lambda obj: _entries(obj, "capacity"),
            "Some capacities after mixins and patches.",
            priority=1,
        ),
        Column(
            "Taints",
            "string",
            _taints,
            "Taints of the device (key:effect), its own and those patches add.",
            priority=1,
        ),
        Column(
            "Slice",
            "string",
            string_at("spec", "resourceSliceName"),
            "The ResourceSlice that publishes the device.",
            priority=1,
        ),
    )
    extra_field_getters: ClassVar[dict[str, FieldGetter]] = {
        "spec.driver": string_at("spec", "driver"),
        "spec.pool.name": string_at("spec", "pool", "name"),
        "spec.nodeName": string_at("spec", "nodeName"),
        "spec.device": string_at("spec", "device"),
        "spec.resourceSliceName": string_at("spec", "resourceSliceName"),
    }

"""The computed Device object of a device state (see ``api.resource.computeddevice``)."""

from __future__ import annotations

from .names import device_object_uid
from .state import JSON, DeviceState

KIND = "Device"
_OWN = ("name", "includes", "nodeName", "nodeSelector", "allNodes")
"""Device fields the object shows elsewhere (or, for includes, never: it is flattened)."""


def device_object(state: DeviceState, api_version: str, revision: int) -> JSON:
    """The object served for ``state``; it shares the state's dicts (read-only)."""
    spec: JSON = {
        "driver": state.driver,
        "pool": state.pool,
        "resourceSliceName": state.slice_name,
        "device": state.device_name,
        **state.nodes,
    }
    for key, value in state.device.items():
        if key not in _OWN:
            spec[key] = value
    metadata: JSON = {
        "name": state.name,
        "uid": device_object_uid(state.slice_uid, state.device_name),
        "resourceVersion": str(revision),
    }
    if state.created:
        metadata["creationTimestamp"] = state.created
    obj: JSON = {"apiVersion": api_version, "kind": KIND, "metadata": metadata, "spec": spec}
    status: JSON = {}
    if state.patched_by:
        status["patchedBy"] = [
            _mark(m.name, m.priority, m.attributes, m.capacity) for m in state.patched_by
        ]
    if state.selector_errors:
        status["selectorErrors"] = [
            {"patch": f.patch, "selector": f.selector, "message": f.message}
            for f in state.selector_errors
        ]
    if status:
        obj["status"] = status
    return obj


def _mark(name: str, priority: int, attributes: tuple[str, ...], capacity: tuple[str, ...]) -> JSON:
    out: JSON = {"name": name, "priority": priority}
    if attributes:
        out["attributes"] = list(attributes)
    if capacity:
        out["capacity"] = list(capacity)
    return out

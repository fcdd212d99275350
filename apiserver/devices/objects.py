"""The computed Device object of a device state (see ``api.resource.computeddevice``)."""

from __future__ import annotations

import functools

from ..toolkit import JSON
from .state import DeviceState, PatchMark, SelectorFault

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
        "uid": state.uid,
        "resourceVersion": str(revision),
    }
    if state.created:
        metadata["creationTimestamp"] = state.created
    obj: JSON = {"apiVersion": api_version, "kind": KIND, "metadata": metadata, "spec": spec}
    status = _status(state.patched_by, state.selector_errors)
    if status is not None:
        obj["status"] = status
    return obj


@functools.lru_cache(maxsize=4096)
def _status(patched_by: tuple[PatchMark, ...], errors: tuple[SelectorFault, ...]) -> JSON | None:
    """The status of a device; devices the same patches shaped share one (read-only) dict."""
    status: JSON = {}
    if patched_by:
        status["patchedBy"] = [_mark(m) for m in patched_by]
    if errors:
        status["selectorErrors"] = [
            {"patch": f.patch, "selector": f.selector, "message": f.message} for f in errors
        ]
    return status or None


def _mark(mark: PatchMark) -> JSON:
    out: JSON = {"name": mark.name, "priority": mark.priority}
    if mark.attributes:
        out["attributes"] = list(mark.attributes)
    if mark.capacity:
        out["capacity"] = list(mark.capacity)
    if mark.taints:
        out["taints"] = list(mark.taints)
    return out

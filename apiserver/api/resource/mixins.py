"""KEP-5234 mixins: a ResourceSlice written with mixins, flattened into the same slice
written without them.

Three kinds of mixin live in ``spec.mixins``: ``device`` (attributes and capacity),
``counterSet`` (counters of a counter set) and ``deviceCounterConsumption`` (counters a
device consumes; the counter set is named where the mixin is included). Devices, counter
sets and counter consumptions name mixins of the matching kind in ``includes``:

* mixins are applied in the order listed, so a later mixin wins over an earlier one;
* what the object sets itself always wins over any mixin;
* maps merge entry by entry (an attribute, capacity or counter is one entry).

``flatten_slice`` works on the JSON form (what is stored and what upstream servers send,
so unknown fields pass through) and is total on well-typed input: a reference to a mixin
that does not exist contributes nothing, so it does not fail where validation would (a
dangling include, duplicate mixin names: the first wins). The result has no ``mixins`` and
no ``includes``. It is a new spec dict; devices, counter sets and consumptions that
include nothing, and everything below them that flattening does not change, are the input's
own objects (no copying where nothing changes): treat input and result as read-only.

``merged`` and ``sources`` are the same rule over any mappings, for validation of typed
objects (which needs to know where each entry of a flattened device came from).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from ...toolkit import JSON

K = TypeVar("K")
V = TypeVar("V")


def merged(
    own: Mapping[K, V] | None,
    includes: Iterable[str] | None,
    mixins: Mapping[str, Mapping[K, V] | None],
) -> dict[K, V]:
    """``own`` on top of the included mixins' maps, later includes on top of earlier ones."""
    out: dict[K, V] = {}
    for name in includes or ():
        entries = mixins.get(name)
        if entries:
            out.update(entries)
    if own:
        out.update(own)
    return out


def sources(
    own: Mapping[K, V] | None,
    includes: Iterable[str] | None,
    mixins: Mapping[str, Mapping[K, V] | None],
) -> dict[K, int | None]:
    """For each key of ``merged(own, includes, mixins)``: the position in ``includes`` of the
    mixin its value comes from, or None when the object sets it itself."""
    out: dict[K, int | None] = {}
    for position, name in enumerate(includes or ()):
        for key in mixins.get(name) or ():
            out[key] = position
    for key in own or ():
        out[key] = None
    return out


def by_name(items: Iterable[Mapping[str, Any]] | None, key: str) -> dict[str, Any]:
    """``{item["name"]: item[key]}`` over JSON mixins; the first of duplicate names wins."""
    out: dict[str, Any] = {}
    for item in items or ():
        name = item.get("name")
        if isinstance(name, str) and name not in out:
            out[name] = item.get(key)
    return out


def _flatten_device(
    device: JSON,
    attributes: Mapping[str, Any],
    capacity: Mapping[str, Any],
    consumptions: Mapping[str, Any],
) -> JSON:
    """One device with its device mixins and its consumptions' mixins applied (the device
    itself when it includes nothing). The loops written out by hand: this is the hot path."""
    includes = device.get("includes")
    consumes = device.get("consumesCounters")
    if includes is None and not any("includes" in c for c in consumes or ()):
        return device
    out = dict(device)
    if includes is not None:
        del out["includes"]
        attrs: JSON = {}
        caps: JSON = {}
        for name in includes:
            entries = attributes.get(name)
            if entries:
                attrs.update(entries)
            entries = capacity.get(name)
            if entries:
                caps.update(entries)
        _set_own_over(out, device, "attributes", attrs)
        _set_own_over(out, device, "capacity", caps)
    if consumes:
        out["consumesCounters"] = [_flatten_counters(c, consumptions) for c in consumes]
    return out


def _flatten_counters(obj: JSON, mixins: Mapping[str, Any]) -> JSON:
    """A counter set or counter consumption with its included counters."""
    includes = obj.get("includes")
    if includes is None:
        return obj
    out = dict(obj)
    del out["includes"]
    counters: JSON = {}
    for name in includes:
        entries = mixins.get(name)
        if entries:
            counters.update(entries)
    _set_own_over(out, obj, "counters", counters)
    return out


def _set_own_over(out: JSON, obj: JSON, key: str, included: JSON) -> None:
    """``out[key]``: the entries ``obj`` sets itself over those its includes gave (in
    ``included``, updated in place); left out when both are empty and ``obj`` had no ``key``."""
    own = obj.get(key)
    if own:
        included.update(own)
    if included or key in obj:
        out[key] = included


def flatten_slice(spec: JSON) -> JSON:
    """The slice spec ``spec`` with every include applied, without ``mixins`` and ``includes``."""
    mixins = spec.get("mixins") or {}
    devices = mixins.get("device")
    attributes = by_name(devices, "attributes")
    capacity = by_name(devices, "capacity")
    consumptions = by_name(mixins.get("deviceCounterConsumption"), "counters")
    out = dict(spec)
    out.pop("mixins", None)
    if spec.get("devices") is not None:
        out["devices"] = [
            _flatten_device(d, attributes, capacity, consumptions) for d in spec["devices"]
        ]
    if spec.get("sharedCounters") is not None:
        sets = by_name(mixins.get("counterSet"), "counters")
        out["sharedCounters"] = [_flatten_counters(s, sets) for s in spec["sharedCounters"]]
    return out

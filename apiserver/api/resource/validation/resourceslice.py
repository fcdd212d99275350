"""Validation of ``resource.k8s.io/v1`` ResourceSlice, with the KEP-5234 mixins.

Upstream v1 rules (names, driver, pool, exactly one node selection, device names unique in
the slice, attributes and capacity, request policies, taints, binding conditions, counters)
and the KEP's rules: every ``includes`` entry names a mixin of the right kind in the same
slice, mixin names are unique DNS labels, and the limits below.

Limits, and where they differ from upstream. The KEP replaces upstream's per-list caps by
slice-wide totals, and its size arithmetic (worst case 1,288,825 bytes per slice) assumes
its own per-field limits, so those are taken as the KEP gives them:

======================================================  =====  ===========================
limit                                                   here   upstream v1 (1.36)
======================================================  =====  ===========================
devices per slice                                       128    128, or 64 with taints,
                                                               consumed counters or list
                                                               attributes
attributes + capacities, devices and device mixins      4096   (none; 32 per device)
attributes + capacities per device, mixins applied      32     32 (without mixins)
attribute values per device (a list counts each value)  48     48 (1.36)
counter sets per slice                                  32     8
counters, counter sets and counter set mixins           256    32 per counter set
consumed counters, consumptions and their mixins        2048   32 per consumption
counter consumptions per device                         4      2
taints per device                                       4      16 (4 in 1.34)
device, counter set, consumption mixins per slice       128, 32, 128
includes per device or counter set; per consumption     8; 4
binding conditions; binding failure conditions          4; 4   4; 4
======================================================  =====  ===========================

Taints and consumptions per device follow the KEP (4 each): upstream raised taints to 16
in 1.35 only together with halving the devices of a slice that uses them, which the KEP's
slice-wide model replaces; keeping 4 keeps the KEP's worst-case object size.

Counter sets may live in two places, and both are accepted:

* beside the devices that consume them, as in the KEP (and in Kubernetes 1.33/1.34): a
  slice holds devices, counter sets and mixins, and a consumption of a counter set of the
  same slice may only name counters that set has (after its mixins);
* in a slice of their own, as Kubernetes 1.35+ drivers publish them: a slice with
  ``sharedCounters`` and no devices, and devices in other slices of the same pool that
  consume them. A consumption naming a counter set the slice does not define is therefore
  not an error here: the counter slice may arrive later, and pool gathering
  (``apiserver.pools.gather``) makes the pool invalid, with a reason, while it lacks the
  set or the counter. Counter set names unique per pool are checked there too.

Upstream's rule that a slice holds either devices or counter sets is not applied, because
the KEP's layout puts both in one slice (``includes`` and the KEP's limits are per slice).

List-type attributes (``ints``, ``bools``, ``strings``, ``versions``; upstream's
``DRAListTypeAttributes``) are non-empty lists of checked scalars, and a flattened device
has at most 48 attribute values (``MAX_ATTRIBUTE_VALUES_PER_DEVICE``, each list element
counting as one, as upstream 1.36).

Mixins themselves have no per-mixin cap (the KEP counts them in the slice totals); a device
mixin with more than 32 entries is legal but cannot be included by any valid device. Lists
longer than their limit get one ``TooMany`` error and only their first entries up to the
limit are checked further, so validation costs time in proportion to the object's size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, TypeVar

from ... import field
from ...core.validation.nodeselector import validate_node_name, validate_node_selector
from ...field import ErrorType, FieldError, Path
from ...names import dns1123_label_errors
from ..device import Counter, CounterSet, DeviceCounterConsumption
from ..mixins import merged, sources
from ..resourceslice import (
    CounterSetMixin,
    Device,
    DeviceCounterConsumptionMixin,
    ResourceSlice,
    ResourceSliceMixins,
    ResourceSliceSpec,
)
from .device import (
    MAX_ATTRIBUTE_VALUES_PER_DEVICE,
    MAX_TAINTS,
    too_many_attributes_and_capacities,
    validate_attributes_and_capacity,
    validate_binding_condition_pair,
    validate_condition_names,
    validate_driver_name,
    validate_pool_name,
    validate_taint,
    validate_unique_name,
)

MAX_DEVICES = 128
MAX_ATTRIBUTES_AND_CAPACITIES_PER_SLICE = 4096
MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32
MAX_COUNTER_SETS = 32
MAX_COUNTERS_PER_SLICE = 256
MAX_CONSUMED_COUNTERS_PER_SLICE = 2048
MAX_CONSUMPTIONS_PER_DEVICE = 4
MAX_TAINTS_PER_DEVICE = MAX_TAINTS
MAX_DEVICE_MIXINS = 128
MAX_COUNTER_SET_MIXINS = 32
MAX_CONSUMPTION_MIXINS = 128
MAX_INCLUDES = 8
MAX_CONSUMPTION_INCLUDES = 4
MAX_BINDING_CONDITIONS = 4
MAX_BINDING_FAILURE_CONDITIONS = 4

SPEC = Path("spec")

T = TypeVar("T")


def validate_resource_slice(
    obj: ResourceSlice, old: ResourceSlice | None = None
) -> list[FieldError]:
    """Every rule for a new slice, or for an update of ``old`` (which adds immutability)."""
    spec = obj.spec
    errs = validate_driver_name(spec.driver, SPEC.child("driver"))
    errs += _validate_pool(spec, SPEC.child("pool"))
    errs += _validate_node_selection(spec, SPEC)
    mixins, mixin_errs = _Mixins.of(spec.mixins, SPEC.child("mixins"))
    errs += mixin_errs
    totals = _totals(spec)
    errs += _validate_totals(totals)
    sets, set_errs = _validate_counter_sets(
        spec.shared_counters or [], mixins, totals.counters_within_limits
    )
    errs += set_errs
    errs += _validate_devices(spec, mixins, sets)
    if old is not None:
        errs += _validate_immutable(spec, old.spec)
    return errs


# -- slice-level fields ---------------------------------------------------------------------


def _validate_pool(spec: ResourceSliceSpec, path: Path) -> list[FieldError]:
    pool = spec.pool
    errs = validate_pool_name(pool.name, path.child("name"))
    errs += field.at_least(path.child("generation"), pool.generation, 0)
    if pool.resource_slice_count <= 0:
        errs.append(
            field.invalid(
                str(path.child("resourceSliceCount")),
                pool.resource_slice_count,
                "must be greater than 0",
            )
        )
    return errs


def _validate_node_selection(spec: ResourceSliceSpec, path: Path) -> list[FieldError]:
    """Exactly one of nodeName, nodeSelector, allNodes and perDeviceNodeSelection."""
    chosen: list[str] = []
    errs = _validate_node_fields(spec, path, chosen)
    if spec.per_device_node_selection is not None:
        chosen.append("perDeviceNodeSelection")
        errs += _true_if_set(spec.per_device_node_selection, path.child("perDeviceNodeSelection"))
    which = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`"
    if not chosen:
        errs.append(field.required(str(path), f"{which} is required"))
    errs += _several_set(path, chosen, which)
    return errs


def _validate_node_fields(
    where: ResourceSliceSpec | Device, path: Path, chosen: list[str]
) -> list[FieldError]:
    """The node fields a slice and (with per-device node selection) a device share: each one
    set is checked and its name added to ``chosen``, for the caller's one-of rule."""
    errs: list[FieldError] = []
    if where.node_name is not None:
        chosen.append("nodeName")
        errs += validate_node_name(where.node_name, path.child("nodeName"))
    if where.node_selector is not None:
        chosen.append("nodeSelector")
        errs += validate_node_selector(
            where.node_selector, path.child("nodeSelector"), exactly_one_term=True
        )
    if where.all_nodes is not None:
        chosen.append("allNodes")
        errs += _true_if_set(where.all_nodes, path.child("allNodes"))
    return errs


def _true_if_set(value: bool, path: Path) -> list[FieldError]:
    return [] if value else [field.invalid(str(path), value, "must be true if set")]


def _several_set(path: Path, chosen: list[str], which: str) -> list[FieldError]:
    """The error for a one-of group with more than one member set (none for one or none)."""
    if len(chosen) <= 1:
        return []
    listed = "{" + ", ".join(chosen) + "}"
    return [field.invalid(str(path), listed, f"{which} is required, but multiple fields are set")]


def _validate_immutable(spec: ResourceSliceSpec, old: ResourceSliceSpec) -> list[FieldError]:
    errs: list[FieldError] = []
    for path, new_value, old_value in (
        (SPEC.child("driver"), spec.driver, old.driver),
        (SPEC.child("pool").child("name"), spec.pool.name, old.pool.name),
        (SPEC.child("nodeName"), spec.node_name, old.node_name),
    ):
        if new_value != old_value:
            errs.append(field.invalid(str(path), new_value, "field is immutable"))
    return errs


def _validate_totals(totals: _Totals) -> list[FieldError]:
    """The KEP's slice-wide totals, counted as written (before mixins are applied)."""
    errs: list[FieldError] = []
    for what, total, limit in (
        (
            "attributes and capacities across devices and device mixins",
            totals.attributes_and_capacities,
            MAX_ATTRIBUTES_AND_CAPACITIES_PER_SLICE,
        ),
        (
            "counters across counter sets and counter set mixins",
            totals.counters,
            MAX_COUNTERS_PER_SLICE,
        ),
        (
            "consumed counters across device counter consumptions and their mixins",
            totals.consumed_counters,
            MAX_CONSUMED_COUNTERS_PER_SLICE,
        ),
    ):
        if total > limit:
            errs.append(
                field.invalid(
                    str(SPEC), total, f"the total number of {what} must not exceed {limit}"
                )
            )
    return errs


@dataclass(frozen=True)
class _Totals:
    attributes_and_capacities: int
    counters: int
    consumed_counters: int

    @property
    def counters_within_limits(self) -> bool:
        """Small enough to work out which counters each counter set has."""
        return (
            self.counters <= MAX_COUNTERS_PER_SLICE
            and self.consumed_counters <= MAX_CONSUMED_COUNTERS_PER_SLICE
        )


def _totals(spec: ResourceSliceSpec) -> _Totals:
    mixins = spec.mixins or ResourceSliceMixins()
    devices = spec.devices or []
    entries = sum(len(d.attributes or {}) + len(d.capacity or {}) for d in devices)
    entries += sum(len(m.attributes or {}) + len(m.capacity or {}) for m in mixins.device or [])
    counters = sum(len(s.counters or {}) for s in spec.shared_counters or [])
    counters += sum(len(m.counters) for m in mixins.counter_set or [])
    consumed = sum(len(c.counters or {}) for d in devices for c in d.consumes_counters or [])
    consumed += sum(len(m.counters) for m in mixins.device_counter_consumption or [])
    return _Totals(entries, counters, consumed)


# -- helpers ---------------------------------------------------------------------------------


def _not_found(path: Path, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.NOT_FOUND, str(path), detail, value)


def _capped(items: Sequence[T], limit: int, path: Path, errs: list[FieldError]) -> Sequence[T]:
    """The first ``limit`` items; one TooMany error if there are more."""
    if len(items) > limit:
        errs.append(field.too_many(str(path), len(items), limit))
        return items[:limit]
    return items


def _validate_counter_names(counters: Mapping[str, Counter] | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for name in counters or {}:
        errs += field.invalid_each(path.key(name), name, dns1123_label_errors(name))
    return errs


def _validate_includes(
    includes: Sequence[str], known: Mapping[str, object], limit: int, path: Path, kind: str
) -> tuple[list[tuple[int, str]], list[FieldError]]:
    """The includes that resolve, as (position, name) in order and within the limit, and
    an error for each one that does not."""
    errs: list[FieldError] = []
    resolved = []
    for k, name in enumerate(_capped(includes, limit, path, errs)):
        if name in known:
            resolved.append((k, name))
        else:
            errs.append(
                _not_found(
                    path.index(k), name, f"no {kind} mixin of that name in this ResourceSlice"
                )
            )
    return resolved, errs


def _validate_unique_names(names: Iterable[str], path: Path) -> list[FieldError]:
    """Each name a DNS label, and no name twice in the list."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, name in enumerate(names):
        npath = path.index(i).child("name")
        errs += field.required_name(npath, name, dns1123_label_errors)
        if not name:
            continue
        if name in seen:
            errs.append(field.duplicate(str(npath), name))
        seen.add(name)
    return errs


# -- mixins ----------------------------------------------------------------------------------


@dataclass
class _Mixins:
    """The mixins of a slice by name (the first of duplicates), their maps ready to merge."""

    attributes: dict[str, Mapping[str, Any]] = dataclass_field(default_factory=dict)
    capacity: dict[str, Mapping[str, Any]] = dataclass_field(default_factory=dict)
    counter_sets: dict[str, Mapping[str, Counter]] = dataclass_field(default_factory=dict)
    consumptions: dict[str, Mapping[str, Counter]] = dataclass_field(default_factory=dict)

    @classmethod
    def of(cls, mixins: ResourceSliceMixins | None, path: Path) -> tuple[_Mixins, list[FieldError]]:
        out = cls()
        errs: list[FieldError] = []
        if mixins is None:
            return out, errs
        dpath = path.child("device")
        for mixin in mixins.device or []:
            out.attributes.setdefault(mixin.name, mixin.attributes or {})
            out.capacity.setdefault(mixin.name, mixin.capacity or {})
        devices = _capped(mixins.device or [], MAX_DEVICE_MIXINS, dpath, errs)
        errs += _validate_unique_names((m.name for m in devices), dpath)
        for i, mixin in enumerate(devices):
            errs += validate_attributes_and_capacity(
                mixin.attributes or {},
                mixin.capacity or {},
                dpath.index(i),
                require_domain=False,
                max_total=None,
            )
        errs += _index_counter_mixins(
            mixins.counter_set or [],
            MAX_COUNTER_SET_MIXINS,
            path.child("counterSet"),
            out.counter_sets,
        )
        errs += _index_counter_mixins(
            mixins.device_counter_consumption or [],
            MAX_CONSUMPTION_MIXINS,
            path.child("deviceCounterConsumption"),
            out.consumptions,
        )
        return out, errs


def _index_counter_mixins(
    listed: Sequence[CounterSetMixin | DeviceCounterConsumptionMixin],
    limit: int,
    path: Path,
    index: dict[str, Mapping[str, Counter]],
) -> list[FieldError]:
    """Add counter mixins of one kind to ``index`` by name, and check them (those within
    the limit)."""
    for mixin in listed:
        index.setdefault(mixin.name, mixin.counters)
    errs: list[FieldError] = []
    items = _capped(listed, limit, path, errs)
    errs += _validate_unique_names((m.name for m in items), path)
    for i, mixin in enumerate(items):
        cpath = path.index(i).child("counters")
        if not mixin.counters:
            errs.append(field.required(str(cpath)))
        errs += _validate_counter_names(mixin.counters, cpath)
    return errs


# -- counter sets ----------------------------------------------------------------------------


def _validate_counter_sets(
    sets: Sequence[CounterSet], mixins: _Mixins, flatten: bool
) -> tuple[dict[str, frozenset[str]] | None, list[FieldError]]:
    """Errors of the counter sets, and each set's counter names once its mixins are applied
    (None unless ``flatten``: the slice has too many counters to be worth flattening)."""
    path = SPEC.child("sharedCounters")
    errs: list[FieldError] = []
    sets = _capped(sets, MAX_COUNTER_SETS, path, errs)
    errs += _validate_unique_names((s.name for s in sets), path)
    names: dict[str, frozenset[str]] = {}
    for i, counter_set in enumerate(sets):
        spath = path.index(i)
        errs += _validate_counter_names(counter_set.counters, spath.child("counters"))
        resolved, include_errs = _validate_includes(
            counter_set.includes or [],
            mixins.counter_sets,
            MAX_INCLUDES,
            spath.child("includes"),
            "counter set",
        )
        errs += include_errs
        counters = set(counter_set.counters or {})
        for _, name in resolved if flatten else ():
            counters.update(mixins.counter_sets[name])
        if not counter_set.counters and not resolved:
            errs.append(
                field.required(
                    str(spath.child("counters")), "a counter set needs at least one counter"
                )
            )
        names.setdefault(counter_set.name, frozenset(counters))
    return (names if flatten else None), errs


# -- devices ---------------------------------------------------------------------------------


def _validate_devices(
    spec: ResourceSliceSpec, mixins: _Mixins, sets: Mapping[str, frozenset[str]] | None
) -> list[FieldError]:
    """Devices; which counters exist is checked only when ``sets`` are known."""
    path = SPEC.child("devices")
    errs: list[FieldError] = []
    devices = _capped(spec.devices or [], MAX_DEVICES, path, errs)
    seen: set[str] = set()
    missing = _MissingCounters(mixins.consumptions, sets or {})
    for i, device in enumerate(devices):
        dpath = path.index(i)
        errs += validate_unique_name(device.name, dpath.child("name"), seen)
        errs += _validate_device_contents(device, mixins, dpath)
        errs += _validate_consumptions(device, mixins, sets, missing, dpath)
        errs += _validate_device_nodes(device, bool(spec.per_device_node_selection), dpath)
        taints = _capped(device.taints or [], MAX_TAINTS_PER_DEVICE, dpath.child("taints"), errs)
        for t, taint in enumerate(taints):
            errs += validate_taint(taint, dpath.child("taints").index(t))
        errs += _validate_binding_conditions(device, dpath)
    return errs


def _validate_device_contents(device: Device, mixins: _Mixins, path: Path) -> list[FieldError]:
    """Attributes and capacity, the device's includes, and the limit on the flattened device."""
    errs = validate_attributes_and_capacity(
        device.attributes or {},
        device.capacity or {},
        path,
        require_domain=False,
        max_total=None,
    )
    includes, include_errs = _validate_includes(
        device.includes or [], mixins.attributes, MAX_INCLUDES, path.child("includes"), "device"
    )
    errs += include_errs
    total = _flattened_size(device, includes, mixins, MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE)
    if total > MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE:
        errs.append(
            too_many_attributes_and_capacities(
                str(path), total, MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE
            )
        )
        return errs
    flat = (
        merged(device.attributes, [name for _, name in includes], mixins.attributes)
        if includes
        else device.attributes or {}
    )
    values = len(flat) + sum(  # a list adds its length less the one a scalar counts
        len(items) - 1
        for a in flat.values()
        if (items := a.ints or a.strings or a.versions or a.bools)
    )
    if values > MAX_ATTRIBUTE_VALUES_PER_DEVICE:
        errs.append(
            field.invalid(
                str(path.child("attributes")),
                values,
                "the total number of attribute values (each element of a list counting as one) "
                f"must not exceed {MAX_ATTRIBUTE_VALUES_PER_DEVICE}",
            )
        )
    if not device.allow_multiple_allocations:
        errs += _forbidden_request_policies(device, includes, mixins, path)
    return errs


def _flattened_size(
    device: Device, includes: Sequence[tuple[int, str]], mixins: _Mixins, limit: int
) -> int:
    """Attributes plus capacities of the flattened device, counted up to just past ``limit``
    (an included mixin may be far larger than any valid device)."""
    total = 0
    for own, from_mixins in (
        (device.attributes or {}, mixins.attributes),
        (device.capacity or {}, mixins.capacity),
    ):
        names = set(own)
        for _, name in includes:
            for key in from_mixins[name]:
                names.add(key)
                if total + len(names) > limit:
                    return total + len(names)
        total += len(names)
    return total


def _forbidden_request_policies(
    device: Device, includes: Sequence[tuple[int, str]], mixins: _Mixins, path: Path
) -> list[FieldError]:
    """A request policy needs allowMultipleAllocations, wherever the flattened device's
    capacity comes from: the device's own entry, or the last mixin that sets it."""
    errs: list[FieldError] = []
    detail = "only allowed when allowMultipleAllocations is true"
    own = device.capacity or {}
    for name, cap in own.items():
        if cap.request_policy is not None:
            errs.append(
                field.forbidden(
                    str(path.child("capacity").key(name).child("requestPolicy")), detail
                )
            )
    source = sources(own, [name for _, name in includes], mixins.capacity)
    culprits = sorted(
        {
            includes[k][0]
            for name, k in source.items()
            if k is not None and mixins.capacity[includes[k][1]][name].request_policy is not None
        }
    )
    for position in culprits:
        errs.append(
            field.forbidden(
                str(path.child("includes").index(position)),
                f"the mixin gives the device a capacity with a requestPolicy, which is {detail}",
            )
        )
    return errs


def _validate_device_nodes(device: Device, per_device: bool, path: Path) -> list[FieldError]:
    """Per-device node selection: exactly one when the slice asks for it, none otherwise."""
    chosen: list[str] = []
    errs = _validate_node_fields(device, path, chosen)
    if not per_device:
        return errs + [
            field.forbidden(
                str(path.child(name)),
                "only allowed when perDeviceNodeSelection is true in the ResourceSlice spec",
            )
            for name in chosen
        ]
    which = "exactly one of `nodeName`, `nodeSelector`, or `allNodes`"
    if not chosen:
        errs.append(
            field.required(
                str(path),
                f"{which} is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            )
        )
    errs += _several_set(path, chosen, which)
    return errs


def _validate_binding_conditions(device: Device, path: Path) -> list[FieldError]:
    """At most 4 of each, label-name shaped, no duplicates, no overlap, both or neither."""
    errs: list[FieldError] = []
    lists = {
        "bindingConditions": (device.binding_conditions or [], MAX_BINDING_CONDITIONS),
        "bindingFailureConditions": (
            device.binding_failure_conditions or [],
            MAX_BINDING_FAILURE_CONDITIONS,
        ),
    }
    checked: dict[str, Sequence[str]] = {}
    for name, (conditions, limit) in lists.items():
        lpath = path.child(name)
        capped = _capped(conditions, limit, lpath, errs)
        checked[name] = capped
        errs += validate_condition_names(capped, lpath)
    # Capped lists: empty exactly when the lists as given are (every cap is above zero).
    errs += validate_binding_condition_pair(
        checked["bindingConditions"],
        checked["bindingFailureConditions"],
        path,
        overlap="must not also be listed in bindingConditions",
        failure_needed="bindingFailureConditions are required when bindingConditions are set",
        conditions_needed="bindingConditions are required when bindingFailureConditions are set",
    )
    return errs


# -- counter consumption ---------------------------------------------------------------------


class _MissingCounters:
    """Counters of a consumption mixin that a counter set lacks, worked out once per pair."""

    def __init__(
        self, consumptions: Mapping[str, Mapping[str, Counter]], sets: Mapping[str, frozenset[str]]
    ) -> None:
        self._consumptions = consumptions
        self._sets = sets
        self._cache: dict[tuple[str, str], list[str]] = {}

    def __call__(self, mixin: str, counter_set: str) -> list[str]:
        key = (mixin, counter_set)
        found = self._cache.get(key)
        if found is None:
            available = self._sets[counter_set]
            found = [c for c in self._consumptions[mixin] if c not in available]
            self._cache[key] = found
        return found


def _validate_consumptions(
    device: Device,
    mixins: _Mixins,
    sets: Mapping[str, frozenset[str]] | None,
    missing: _MissingCounters,
    path: Path,
) -> list[FieldError]:
    errs: list[FieldError] = []
    cpath = path.child("consumesCounters")
    consumptions = _capped(device.consumes_counters or [], MAX_CONSUMPTIONS_PER_DEVICE, cpath, errs)
    seen: set[str] = set()
    for j, consumption in enumerate(consumptions):
        errs += _validate_consumption(consumption, mixins, sets, missing, cpath.index(j), seen)
    return errs


def _validate_consumption(
    consumption: DeviceCounterConsumption,
    mixins: _Mixins,
    sets: Mapping[str, frozenset[str]] | None,
    missing: _MissingCounters,
    path: Path,
    seen: set[str],
) -> list[FieldError]:
    errs: list[FieldError] = []
    set_path = path.child("counterSet")
    set_name = consumption.counter_set
    known_set = False
    if not set_name:
        errs.append(field.required(str(set_path)))
    elif set_name in seen:
        errs.append(field.duplicate(str(set_path), set_name))
    elif sets is not None and set_name in sets:
        known_set = True
    # else: a counter set of another slice of the pool (the 1.35 layout), or too many
    # counters in this slice to tell which exist; pool gathering resolves it.
    seen.add(set_name)
    counters_path = path.child("counters")
    errs += _validate_counter_names(consumption.counters, counters_path)
    includes_path = path.child("includes")
    written = consumption.includes or []
    resolved, include_errs = _validate_includes(
        written,
        mixins.consumptions,
        MAX_CONSUMPTION_INCLUDES,
        includes_path,
        "device counter consumption",
    )
    errs += include_errs
    if not consumption.counters and not resolved:
        errs.append(field.required(str(counters_path), "at least one counter must be consumed"))
    if not known_set or sets is None:
        return errs
    available = sets[set_name]
    for name in consumption.counters or {}:
        if name not in available:
            errs.append(
                _not_found(
                    counters_path.key(name),
                    name,
                    f"no counter of that name in counter set {set_name}",
                )
            )
    for k, name in resolved:
        absent = missing(name, set_name)
        if absent:
            errs.append(
                _not_found(
                    includes_path.index(k),
                    name,
                    f"the mixin consumes counters that counter set {set_name} does not have: "
                    + ", ".join(absent[:8])
                    + (", ..." if len(absent) > 8 else ""),
                )
            )
    return errs

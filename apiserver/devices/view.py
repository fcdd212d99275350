"""The device view: every device of every ResourceSlice, mixins flattened, patches applied.

Kept current from three sources (slices, classes, patches), incrementally:

* a slice change flattens that slice again; a device whose flattened form did not change
  keeps its matches, any other device is matched against the patches that can select it
  (indexed by the device, pool or driver their filter names, plus those without any);
* a patch change re-evaluates that patch over the devices its filter can select (indexed
  by device name, pool and driver) if its filter changed, and otherwise only merges the
  devices it already matches again (priority or attributes changed);
* a DeviceClass change re-evaluates the patches that name the class.

Work runs on one task fed by a queue of changed keys (several changes of one object are
one piece of work, read from the source's cache when it runs). Each piece of work ends
in a commit: the devices whose state changed, published at once to ``devices()`` and to
listeners, at a view revision that is the source's revision or one past the previous
commit, whichever is larger (so commits are ordered even when sources are not ordered
among themselves). Listeners hear about devices only from here, never from the raw
sources, so a listener never sees a slice before the patches that apply to it.

CPU: CEL values are converted once per device version, class selector results are
cached per device, compiled programs come from the CEL cache; long loops yield to the
event loop through a ``Pacer`` (``toolkit.pacing``).

Garbage collection (``pause_gc``, set by the server): the build creates a few million
long-lived objects, and each full collection of the cyclic collector then walks all of
them, holding the event loop for hundreds of milliseconds (see bench/RESULTS.md). So the
build runs with the collector paused and ends with ``gc.freeze()``: later collections skip
what the build made. The view breaks its own reference cycles when it drops a slice, a
device or a patch, so frozen objects it lets go of are still freed by reference counting.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ..api.resource import device_placement, flatten_slice, placement
from ..sources import Source, SourceEvent
from ..tasks import BackgroundTask
from ..toolkit import JSON
from ..toolkit.collector import collector_paused
from ..toolkit.pacing import Pacer
from .matching import Candidate, Outcome, SelectorFailure, describe, patch_outcome
from .merging import merge
from .names import device_object_name, device_object_uid
from .patches import CompiledClass, CompiledPatch, compile_class, compile_patch
from .state import (
    Commit,
    DeviceChange,
    DeviceListener,
    DeviceState,
    FaultSummary,
    PatchListener,
    PatchReport,
    SelectorFault,
)

log = logging.getLogger("apiserver.devices")

SLICES, CLASSES, PATCHES = "slice", "class", "patch"


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


class _Slice:
    __slots__ = (
        "created",
        "devices",
        "driver",
        "name",
        "obj",
        "placement",
        "pool",
        "shared_nodes",
        "uid",
    )

    def __init__(self, obj: JSON) -> None:
        meta = _dict(obj.get("metadata"))
        spec = _dict(obj.get("spec"))
        self.obj = obj
        self.name = str(meta.get("name", ""))
        self.uid = str(meta.get("uid", ""))
        self.created = meta.get("creationTimestamp")
        self.driver = str(spec.get("driver", ""))
        self.pool = _dict(spec.get("pool"))
        self.placement = placement(spec)
        self.shared_nodes = self.placement.fields
        self.devices: dict[str, _Device] = {}

    @property
    def pool_name(self) -> str:
        return str(self.pool.get("name", ""))

    def nodes(self, device: JSON) -> JSON:
        if not self.placement.per_device:
            return self.shared_nodes
        return device_placement(device).fields


class _Device(Candidate):
    __slots__ = ("faults", "matched", "object_name", "slice", "state", "uid")

    def __init__(self, owner: _Slice, raw: JSON) -> None:
        super().__init__(owner.driver, owner.pool_name, raw)
        self.slice = owner
        self.object_name = device_object_name(owner.name, self.name)
        self.uid = device_object_uid(owner.uid, self.name)
        self.matched: dict[str, _Patch] = {}
        self.faults: dict[str, SelectorFault] = {}
        self.state: DeviceState | None = None


class _Patch:
    __slots__ = ("compiled", "faults", "matched", "report")

    def __init__(self, compiled: CompiledPatch) -> None:
        self.compiled = compiled
        self.matched: set[_Device] = set()
        self.faults: dict[_Device, SelectorFailure] = {}
        self.report: PatchReport | None = None


class DeviceView:
    def __init__(
        self,
        slices: Source,
        classes: Source,
        patches: Source,
        *,
        budget: float = 0.01,
        pause_gc: bool = False,
    ) -> None:
        self.sources = {SLICES: slices, CLASSES: classes, PATCHES: patches}
        self.pacer = Pacer(budget)
        self.pause_gc = pause_gc
        self.revision = 0
        self._published: dict[str, DeviceState] = {}
        self._slices: dict[str, _Slice] = {}
        self._devices: dict[str, _Device] = {}
        self._by_driver: defaultdict[str, set[_Device]] = defaultdict(set)
        self._by_pool: defaultdict[str, set[_Device]] = defaultdict(set)
        self._by_name: defaultdict[str, set[_Device]] = defaultdict(set)
        self._patches: dict[str, _Patch] = {}
        self._buckets: defaultdict[tuple[str, str | None], set[_Patch]] = defaultdict(set)
        self._by_class: defaultdict[str, set[_Patch]] = defaultdict(set)
        self._classes: dict[str, tuple[CompiledClass, int]] = {}
        self._class_versions = itertools.count(1)
        self._queue: dict[tuple[str, str], None] = {}
        self._wakeup = asyncio.Event()
        self._synced = asyncio.Event()
        self._idle = asyncio.Event()
        self._listeners: list[DeviceListener] = []
        self._patch_listeners: list[PatchListener] = []
        self._task = BackgroundTask("device view", self._run, log)
        # What the work in progress changed, published by the next commit.
        self._affected: set[_Device] = set()
        self._removed: list[DeviceState] = []
        self._touched: set[_Patch] = set()
        for kind, source in self.sources.items():
            source.add_handler(self._enqueuer(kind))

    # -- public ------------------------------------------------------------------

    def subscribe(self, listener: DeviceListener) -> None:
        """Add a listener; if the view has synced already it is reset to the current state."""
        self._listeners.append(listener)
        if self.has_synced:
            listener.reset(self._published.values(), self.revision)

    def subscribe_patches(self, listener: PatchListener) -> None:
        self._patch_listeners.append(listener)
        if self.has_synced:
            listener([p.report for p in self._patches.values() if p.report is not None])

    async def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.close()

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    @property
    def idle(self) -> bool:
        """Synced, and every change queued so far committed (``wait_idle`` would not wait)."""
        return self._synced.is_set() and not self._queue and self._idle.is_set()

    async def wait_idle(self) -> None:
        """Until every change queued so far has been committed."""
        await self.wait_synced()
        while self._queue or not self._idle.is_set():
            self._idle.clear()
            await self._idle.wait()

    def devices(self) -> list[DeviceState]:
        """Every device as of the last commit."""
        return list(self._published.values())

    def device(self, name: str) -> DeviceState | None:
        return self._published.get(name)

    def patch_report(self, name: str) -> PatchReport | None:
        patch = self._patches.get(name)
        return patch.report if patch is not None else None

    # -- the work loop -------------------------------------------------------------

    def _enqueuer(self, kind: str) -> Any:
        def enqueue(event: SourceEvent) -> None:
            self._queue[(kind, event.key)] = None
            self._idle.clear()
            self._wakeup.set()

        return enqueue

    async def _run(self) -> None:
        for source in self.sources.values():
            await source.wait_synced()
        self._queue.clear()  # the build reads the caches; later changes queue up again
        await self.build()
        while True:
            if not self._queue:
                self._idle.set()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            kind, key = next(iter(self._queue))
            del self._queue[(kind, key)]
            try:
                await self.process(kind, key)
            except Exception:
                log.exception("device view: %s %s failed", kind, key)

    async def process(self, kind: str, key: str) -> None:
        """Bring the view up to date with the cached state of one object, and commit."""
        self.pacer.begin()
        if kind == SLICES:
            await self._reconcile_slice(key)
        elif kind == PATCHES:
            await self._reconcile_patch(key)
        else:
            await self._reconcile_class(key)
        await self._commit(self.sources[kind].revision)
        self.pacer.end()

    async def build(self) -> None:
        """The full computation from the sources' caches, yielding to the loop as it goes."""
        with collector_paused(pause=self.pause_gc, freeze=True):
            await self._build()

    async def _build(self) -> None:
        self.pacer.begin()
        for obj in self.sources[CLASSES].items():
            self._set_class(compile_class(obj))
            await self.pacer.tick()
        for obj in self.sources[PATCHES].items():
            self._index_patch(_Patch(compile_patch(obj)))
            await self.pacer.tick()
        for obj in self.sources[SLICES].items():
            owner = self._add_slice(obj)
            for device in owner.devices.values():
                self._index_device(device)
            await self.pacer.tick()
        for patch in self._patches.values():
            for device in self._candidate_devices(patch.compiled):
                self._set_outcome(patch, device, self._outcome(patch, device))
                await self.pacer.tick()
        for device in self._devices.values():
            device.state = self._state_of(device)
            self._published[device.object_name] = device.state
            await self.pacer.tick()
        self._affected.clear()
        self._touched = set(self._patches.values())
        self.revision = max(s.revision for s in self.sources.values())
        for listener in self._listeners:
            listener.reset(self._published.values(), self.revision)
        self._report()
        self._synced.set()
        self.pacer.end()

    async def _commit(self, source_revision: int) -> None:
        updates = []
        for device in sorted(self._affected, key=lambda d: d.object_name):
            if self._devices.get(device.object_name) is not device:
                continue  # removed again by the same piece of work
            state = self._state_of(device)
            if state != device.state:
                updates.append((device, state))
            await self.pacer.tick()
        # A device replaced under the same name is one change, not a removal and an addition.
        removed = {old.name: old for old in self._removed}
        changes = []
        for device, state in updates:
            before = removed.pop(state.name, device.state)
            if before != state:
                changes.append(DeviceChange(before, state))
        changes.extend(DeviceChange(old, None) for old in removed.values())
        # From here on nothing yields: readers see the whole commit or none of it.
        for old in removed.values():
            self._published.pop(old.name, None)
        for device, state in updates:
            device.state = state
            self._published[device.object_name] = state
        self._affected.clear()
        self._removed.clear()
        if changes:
            self.revision = max(self.revision + 1, source_revision)
            commit = Commit(self.revision, tuple(changes))
            for listener in self._listeners:
                listener.apply(commit)
        self._report()

    def _report(self) -> None:
        reports = []
        for patch in self._touched:
            if self._patches.get(patch.compiled.name) is not patch:
                continue
            report = self._report_of(patch)
            if report != patch.report:
                patch.report = report
                reports.append(report)
        self._touched.clear()
        if reports:
            for listener in self._patch_listeners:
                listener(reports)

    # -- states and reports ----------------------------------------------------------

    def _state_of(self, device: _Device) -> DeviceState:
        owner = device.slice
        patches = sorted((p.compiled for p in device.matched.values()), key=lambda c: c.order)
        patched, marks = merge(device.raw, owner.driver, patches)
        faults = tuple(sorted(device.faults.values(), key=lambda f: f.patch))
        return DeviceState(
            name=device.object_name,
            uid=device.uid,
            slice_name=owner.name,
            slice_uid=owner.uid,
            created=owner.created,
            driver=owner.driver,
            pool=owner.pool,
            nodes=owner.nodes(device.raw),
            device=patched,
            patched_by=marks,
            selector_errors=faults,
        )

    def _report_of(self, patch: _Patch) -> PatchReport:
        compiled = patch.compiled
        problem, reason = compiled.problem, "InvalidSelector"
        if problem is None and compiled.class_name is not None:
            found = self._classes.get(compiled.class_name)
            if found is None:
                problem = f"DeviceClass {compiled.class_name} not found"
                reason = "DeviceClassNotFound"
            else:
                problem, reason = found[0].problem, "InvalidDeviceClass"
        groups: dict[tuple[str, str], list[str]] = defaultdict(list)
        for device, failure in patch.faults.items():
            groups[(failure.selector, failure.message)].append(describe(device))
        faults = tuple(
            FaultSummary(selector, message, len(devices), min(devices))
            for (selector, message), devices in sorted(groups.items())
        )
        return PatchReport(
            compiled.name,
            compiled.uid,
            compiled.generation,
            len(patch.matched),
            faults,
            problem,
            reason if problem is not None else None,
        )

    # -- matching ------------------------------------------------------------------

    def _class(self, name: str) -> tuple[CompiledClass, int] | None:
        return self._classes.get(name)

    def _outcome(self, patch: _Patch, device: _Device) -> Outcome:
        return patch_outcome(patch.compiled, device, self._class)

    def _set_outcome(self, patch: _Patch, device: _Device, outcome: Outcome) -> None:
        name = patch.compiled.name
        if outcome is True:
            if device not in patch.matched:
                patch.matched.add(device)
                self._touched.add(patch)
            device.matched[name] = patch
        else:
            if device in patch.matched:
                patch.matched.discard(device)
                self._touched.add(patch)
            device.matched.pop(name, None)
        if isinstance(outcome, SelectorFailure):
            if patch.faults.get(device) != outcome:
                patch.faults[device] = outcome
                self._touched.add(patch)
            device.faults[name] = SelectorFault(name, outcome.selector, outcome.message)
        else:
            if patch.faults.pop(device, None) is not None:
                self._touched.add(patch)
            device.faults.pop(name, None)

    def _candidate_devices(self, compiled: CompiledPatch) -> list[_Device]:
        """The devices a patch's names can select: the smallest index set that applies."""
        options: list[set[_Device]] = []
        if compiled.device is not None:
            options.append(self._by_name.get(compiled.device, set()))
        if compiled.pool is not None:
            options.append(self._by_pool.get(compiled.pool, set()))
        if compiled.driver is not None:
            options.append(self._by_driver.get(compiled.driver, set()))
        if not options:
            return list(self._devices.values())
        smallest = options[0]
        for members in options[1:]:
            if len(members) < len(smallest):
                smallest = members
        return list(smallest)

    def _candidate_patches(self, device: _Device) -> set[_Patch]:
        """The patches that can select a device: by its name, pool and driver, and those
        whose filter names none of these."""
        out: set[_Patch] = set()
        for bucket in (
            ("device", device.name),
            ("pool", device.pool),
            ("driver", device.driver),
            ("all", None),
        ):
            found = self._buckets.get(bucket)
            if found:
                out |= found
        return out

    # -- slices ----------------------------------------------------------------------

    def _add_slice(self, obj: JSON, old: _Slice | None = None) -> _Slice:
        """A slice and its flattened devices; devices of ``old`` that did not change are
        carried over with their matches (returned in ``reused``)."""
        owner = _Slice(obj)
        spec = _dict(obj.get("spec"))
        flat = flatten_slice(spec)
        for raw in flat.get("devices") or ():
            if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
                continue
            if raw["name"] in owner.devices:
                continue  # a duplicate name (validation forbids it): the first one counts
            device = _Device(owner, raw)
            holder = self._devices.get(device.object_name)
            if holder is not None and holder.slice is not old:
                log.warning("device view: %s is taken; ignoring a duplicate", device.object_name)
                continue
            owner.devices[device.name] = device
        self._slices[owner.name] = owner
        return owner

    def _index_device(self, device: _Device) -> None:
        self._devices[device.object_name] = device
        self._by_driver[device.driver].add(device)
        self._by_pool[device.pool].add(device)
        self._by_name[device.name].add(device)
        self._affected.add(device)

    def _unindex_device(self, device: _Device) -> None:
        if self._devices.get(device.object_name) is device:
            del self._devices[device.object_name]
        for index, value in (
            (self._by_driver, device.driver),
            (self._by_pool, device.pool),
            (self._by_name, device.name),
        ):
            members = index.get(value)
            if members is not None:
                members.discard(device)
                if not members:
                    del index[value]

    def _remove_device(self, device: _Device) -> None:
        self._unindex_device(device)
        for patch in list(device.matched.values()):
            self._set_outcome(patch, device, False)
        for name in list(device.faults):
            faulty = self._patches.get(name)
            if faulty is not None:
                self._set_outcome(faulty, device, False)
        device.faults.clear()
        self._affected.discard(device)
        if device.state is not None:
            self._removed.append(device.state)

    async def _match_device(self, device: _Device) -> None:
        for patch in self._candidate_patches(device):
            self._set_outcome(patch, device, self._outcome(patch, device))
        await self.pacer.tick()

    async def _reconcile_slice(self, key: str) -> None:
        obj = self.sources[SLICES].get(key)
        old = self._slices.get(key)
        if old is not None and old.obj is obj:
            return
        if obj is None:
            if old is not None:
                del self._slices[key]
                for device in old.devices.values():
                    self._remove_device(device)
                old.devices.clear()  # no slice <-> device cycles left for the collector
            return
        new = self._add_slice(obj, old)
        previous = old.devices if old is not None else {}
        for name, device in list(new.devices.items()):
            before = previous.get(name)
            if (
                before is not None
                and before.raw == device.raw
                and before.driver == device.driver
                and before.pool == device.pool
            ):
                # Same device, same matches: move it to the new slice object.
                before.slice = new
                before.raw = device.raw
                new.devices[name] = before
                self._affected.add(before)
                continue
            if before is not None:
                self._remove_device(before)
            self._index_device(device)
            await self._match_device(device)
        for name, device in previous.items():
            if name not in new.devices:
                self._remove_device(device)
        if old is not None:
            old.devices.clear()

    # -- patches ---------------------------------------------------------------------

    def _index_patch(self, patch: _Patch) -> None:
        self._patches[patch.compiled.name] = patch
        self._buckets[patch.compiled.bucket].add(patch)
        if patch.compiled.class_name is not None:
            self._by_class[patch.compiled.class_name].add(patch)
        self._touched.add(patch)

    def _unindex_patch(self, patch: _Patch) -> None:
        compiled = patch.compiled
        if self._patches.get(compiled.name) is patch:
            del self._patches[compiled.name]
        bucket = self._buckets.get(compiled.bucket)
        if bucket is not None:
            bucket.discard(patch)
            if not bucket:
                del self._buckets[compiled.bucket]
        if compiled.class_name is not None:
            members = self._by_class.get(compiled.class_name)
            if members is not None:
                members.discard(patch)
                if not members:
                    del self._by_class[compiled.class_name]

    async def _evaluate_patch(self, patch: _Patch) -> None:
        """Match a patch anew against every device its names can select."""
        previous = set(patch.matched) | set(patch.faults)
        outcomes: dict[_Device, Outcome] = {}
        for device in self._candidate_devices(patch.compiled):
            outcome = self._outcome(patch, device)
            if outcome is not False:
                outcomes[device] = outcome
            await self.pacer.tick()
        for device in previous | set(outcomes):
            self._set_outcome(patch, device, outcomes.get(device, False))
            self._affected.add(device)

    async def _reconcile_patch(self, key: str) -> None:
        obj = self.sources[PATCHES].get(key)
        old = self._patches.get(key)
        if obj is None:
            if old is not None:
                self._unindex_patch(old)
                for device in list(old.matched) + list(old.faults):
                    self._set_outcome(old, device, False)
                    self._affected.add(device)
            return
        compiled = compile_patch(obj)
        if old is not None and compiled.filter_key == old.compiled.filter_key:
            merge_changed = compiled.merge_key != old.compiled.merge_key
            if merge_changed or compiled.generation != old.compiled.generation:
                self._touched.add(old)
            old.compiled = compiled
            if merge_changed:
                self._affected.update(old.matched)
            return
        if old is not None:
            self._unindex_patch(old)
            patch = old
            patch.compiled = compiled
        else:
            patch = _Patch(compiled)
        self._index_patch(patch)
        await self._evaluate_patch(patch)

    # -- classes ---------------------------------------------------------------------

    def _set_class(self, compiled: CompiledClass) -> None:
        self._classes[compiled.name] = (compiled, next(self._class_versions))

    async def _reconcile_class(self, key: str) -> None:
        obj = self.sources[CLASSES].get(key)
        old = self._classes.get(key)
        compiled = compile_class(obj) if obj is not None else None
        if compiled is not None and old is not None and compiled.expressions == old[0].expressions:
            return
        if compiled is None and old is None:
            return
        if compiled is None:
            del self._classes[key]
        else:
            self._set_class(compiled)
        for patch in list(self._by_class.get(key, ())):
            self._touched.add(patch)
            await self._evaluate_patch(patch)


def snapshot(states: Iterable[DeviceState]) -> dict[str, DeviceState]:
    """States by name: what two views are compared by."""
    return {s.name: s for s in states}

"""What the device view publishes: immutable device states, commits, and patch reports."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from ..toolkit import JSON


@dataclass(frozen=True, slots=True)
class PatchMark:
    """A patch that matches a device, and the entries of the device it decides."""

    name: str
    priority: int
    attributes: tuple[str, ...] = ()
    capacity: tuple[str, ...] = ()
    taints: tuple[str, ...] = ()
    """The taints it put on the device, written ``key=value:Effect`` (``key:Effect``)."""


@dataclass(frozen=True, slots=True)
class SelectorFault:
    """A patch skips a device because one of its selectors failed to evaluate for it."""

    patch: str
    selector: str
    message: str


@dataclass(frozen=True, slots=True)
class DeviceState:
    """One device as the cluster offers it. Its dicts are shared: never mutate them."""

    name: str
    """The computed object's name (``names.device_object_name``)."""
    uid: str
    """The computed object's uid (``names.device_object_uid``)."""
    slice_name: str
    slice_uid: str
    created: str | None
    driver: str
    pool: JSON
    nodes: JSON
    """Where the device is available: ``nodeName``, ``nodeSelector`` or ``allNodes``."""
    device: JSON
    """The device after mixins and patches (upstream Device shape, no ``includes``)."""
    patched_by: tuple[PatchMark, ...] = ()
    selector_errors: tuple[SelectorFault, ...] = ()

    @property
    def device_name(self) -> str:
        return str(self.device.get("name", ""))

    @property
    def pool_name(self) -> str:
        return str(self.pool.get("name", ""))


@dataclass(frozen=True)
class DeviceChange:
    """A device appeared (``old`` None), disappeared (``new`` None) or changed."""

    old: DeviceState | None
    new: DeviceState | None


@dataclass(frozen=True)
class Commit:
    """Every device change one source change caused, at one view revision."""

    revision: int
    changes: tuple[DeviceChange, ...]


class DeviceListener(Protocol):
    """Told about the devices: the whole state once synced, then every commit in order."""

    def reset(self, states: Iterable[DeviceState], revision: int) -> None: ...

    def apply(self, commit: Commit) -> None: ...


@dataclass(frozen=True)
class FaultSummary:
    """One distinct selector failure of a patch, over all the devices it happens on."""

    selector: str
    message: str
    devices: int
    example: str
    """One device it fails on, as ``driver/pool/device``."""


@dataclass(frozen=True)
class PatchReport:
    """What the view knows about a patch: for its status and its warning Events."""

    name: str
    uid: str
    generation: int
    matched: int
    faults: tuple[FaultSummary, ...] = ()
    problem: str | None = None
    """Why the patch matches nothing at all, if that is the case."""
    problem_reason: str | None = None
    """``InvalidSelector`` (a selector does not compile), ``DeviceClassNotFound`` or
    ``InvalidDeviceClass`` (a selector of the class does not compile)."""


PatchListener = Callable[[list[PatchReport]], None]

"""ResourceSlicePatches and DeviceClasses, compiled once for matching and merging.

Read from raw JSON (what the sources hold); selectors are compiled through the CEL
layer's cache without a cost limit (they were checked when the object was written), and a
selector that does not compile makes the patch (or class) match nothing, with the reason
kept in ``problem``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cel import CELError, Program, compile_selector
from ..toolkit import JSON

NULL = None
"""How a ``null`` attribute entry (removal) is represented in ``CompiledPatch.attributes``."""

Entry = tuple[str, str, Any]
Entries = tuple[tuple[Entry, ...], tuple[Entry, ...]]


def local_name(name: str, driver: str) -> str:
    """How a device of ``driver`` names an attribute or capacity a patch calls ``name``:
    the driver's own domain is left out."""
    domain, sep, ident = name.rpartition("/")
    return ident if sep and domain == driver else name


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _expressions(selectors: Any) -> tuple[str | None, ...]:
    """The CEL expression of each selector (None for a selector of another kind)."""
    out: list[str | None] = []
    for selector in selectors if isinstance(selectors, list) else ():
        cel = _dict(selector).get("cel")
        out.append(_string(_dict(cel).get("expression")))
    return tuple(out)


def _compile(
    expressions: tuple[str | None, ...], where: str
) -> tuple[tuple[tuple[str, Program], ...], str | None]:
    """(selector path, program) pairs, or the first problem."""
    programs = []
    for i, expression in enumerate(expressions):
        path = f"{where}[{i}].cel.expression"
        if expression is None:
            return (), f"{where}[{i}]: only CEL selectors are supported"
        try:
            programs.append((path, compile_selector(expression, cost_limit=None)))
        except CELError as err:
            return (), f"{path}: {err}"
    return tuple(programs), None


@dataclass(frozen=True, eq=False)
class CompiledPatch:
    name: str
    uid: str
    generation: int
    priority: int
    created: str
    driver: str | None
    pool: str | None
    device: str | None
    class_name: str | None
    expressions: tuple[str | None, ...]
    programs: tuple[tuple[str, Program], ...]
    problem: str | None
    attributes: dict[str, JSON | None]
    capacity: dict[str, JSON]
    taints: tuple[JSON, ...] = ()
    order: tuple[int, str, str] = field(init=False)
    """Precedence: higher priority first, then older, then by name."""
    _entries: dict[str, Entries] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "order", (-self.priority, self.created, self.name))
        object.__setattr__(self, "_entries", {})

    def entries(self, driver: str) -> Entries:
        """(name in the patch, name on a device of ``driver``, value) of its attributes
        and of its capacities, worked out once per driver."""
        found = self._entries.get(driver)
        if found is None:
            found = (
                tuple((n, local_name(n, driver), v) for n, v in self.attributes.items()),
                tuple((n, local_name(n, driver), v) for n, v in self.capacity.items()),
            )
            self._entries[driver] = found
        return found

    @property
    def filter_key(self) -> tuple[Any, ...]:
        """Everything that decides which devices match (a change means re-evaluating): the
        filter, and whether the patch sets anything at all (one that sets nothing applies to
        no device, rather than being listed on every device it selects)."""
        return (
            self.driver,
            self.pool,
            self.device,
            self.class_name,
            self.expressions,
            self.sets_something,
        )

    @property
    def merge_key(self) -> tuple[Any, ...]:
        """Everything that decides what the patch does to a matching device."""
        return (self.order, self.attributes, self.capacity, self.taints)

    @property
    def sets_something(self) -> bool:
        return bool(self.attributes or self.capacity or self.taints)

    @property
    def bucket(self) -> tuple[str, str | None]:
        """The most selective criterion, for indexing: device, pool, driver or none."""
        if self.device is not None:
            return ("device", self.device)
        if self.pool is not None:
            return ("pool", self.pool)
        if self.driver is not None:
            return ("driver", self.driver)
        return ("all", None)


def compile_patch(obj: JSON) -> CompiledPatch:
    meta = _dict(obj.get("metadata"))
    devices = _dict(_dict(obj.get("spec")).get("devices"))
    flt = _dict(devices.get("filter"))
    expressions = _expressions(flt.get("selectors"))
    programs, problem = _compile(expressions, "spec.devices.filter.selectors")
    priority = devices.get("priority")
    attributes: dict[str, JSON | None] = {}
    for name, value in _dict(devices.get("attributes")).items():
        attributes[name] = NULL if "null" in _dict(value) else _dict(value)
    capacity = {name: _dict(value) for name, value in _dict(devices.get("capacity")).items()}
    taints = devices.get("taints")
    generation = meta.get("generation")
    return CompiledPatch(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        generation=generation if isinstance(generation, int) else 0,
        priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
        created=str(meta.get("creationTimestamp") or ""),
        driver=_string(flt.get("driver")),
        pool=_string(flt.get("pool")),
        device=_string(flt.get("device")),
        class_name=_string(flt.get("deviceClassName")),
        expressions=expressions,
        programs=programs,
        problem=problem,
        attributes=attributes,
        capacity=capacity,
        taints=tuple(t for t in taints if isinstance(t, dict)) if isinstance(taints, list) else (),
    )


@dataclass(frozen=True, eq=False)
class CompiledClass:
    name: str
    expressions: tuple[str | None, ...]
    programs: tuple[tuple[str, Program], ...]
    problem: str | None


def compile_class(obj: JSON) -> CompiledClass:
    meta = _dict(obj.get("metadata"))
    name = str(meta.get("name", ""))
    expressions = _expressions(_dict(obj.get("spec")).get("selectors"))
    programs, problem = _compile(expressions, f"deviceclass {name}: spec.selectors")
    return CompiledClass(name, expressions, programs, problem)

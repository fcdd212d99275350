"""Consumable capacity (DRAConsumableCapacity): how much of a device's capacity one request
takes, and whether the device can still give it. Upstream's rules, on nano units.

A device's capacity is a ``value`` and, on a device with ``allowMultipleAllocations``, an
optional ``requestPolicy``. What one request consumes of each capacity of the device:

* the capacity is not requested: the policy's ``default`` if set, else the whole value;
* requested, no policy: the amount requested;
* requested, ``validRange``: at least ``min``; with a ``step``, rounded up to the next
  ``min + n·step``, in whole units (upstream's ``Quantity.Value()``, which rounds up);
* requested, ``validValues``: the smallest valid value at least the amount requested (the
  amount itself when it exceeds them all).

The amount then violates the policy (and the device cannot serve the request) when it is
not the default and exceeds ``max``, is off-step, or is not one of ``validValues``. A
request naming a capacity the device lacks never fits; otherwise it fits when, for every
capacity of the device, what others already consume plus this amount stays within the
value. So a dedicated device fits a request that asks for no more than it has, and a
shared device fits while its capacity lasts (an unrequested capacity without a default
takes the whole value, so such a device is shared by nobody).

Source: kubernetes/dynamic-resource-allocation ``structured/internal/incubating/
consumable_capacity.go`` (``CmpRequestOverCapacity``, ``calculateConsumedCapacity``,
``roundUpRange``, ``roundUpValidValues``, ``violatesPolicy``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...cel.quantity import NANO, QuantityError, parse
from ...toolkit import JSON

Amounts = Mapping[str, int]
"""Capacity name -> amount in nano units."""

_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL = ("", "k", "M", "G", "T", "P", "E")


def units(nanos: int) -> int:
    """Whole units, rounded up (upstream's ``Quantity.Value()``)."""
    return -((-nanos) // NANO)


@dataclass(frozen=True, slots=True)
class Policy:
    """A capacity's ``requestPolicy`` in nano units; ``ranged`` when ``validRange`` is set."""

    default: int | None = None
    valid_values: tuple[int, ...] = ()
    ranged: bool = False
    min: int = 0
    max: int | None = None
    step: int | None = None


@dataclass(frozen=True, slots=True)
class Capacity:
    value: int
    policy: Policy | None = None


def nanos(raw: Any) -> int | None:
    """A quantity (string or number) in nano units; None if it is not one."""
    if isinstance(raw, bool) or raw is None:
        return None
    try:
        return parse(str(raw)).nanos
    except QuantityError:
        return None


def _policy(raw: Any) -> Policy | None:
    if not isinstance(raw, dict):
        return None
    values = tuple(v for v in (nanos(x) for x in raw.get("validValues") or ()) if v is not None)
    rng = raw.get("validRange")
    low = nanos(rng.get("min")) if isinstance(rng, dict) else None
    return Policy(
        default=nanos(raw.get("default")),
        valid_values=values,
        ranged=low is not None,
        min=low or 0,
        max=nanos(rng.get("max")) if isinstance(rng, dict) else None,
        step=nanos(rng.get("step")) if isinstance(rng, dict) else None,
    )


def device_capacities(device: JSON) -> dict[str, Capacity]:
    """A (flattened) device's capacities by name; one whose value cannot be read is left out
    (validation rejects it on write)."""
    out = {}
    raw = device.get("capacity")
    for name, entry in raw.items() if isinstance(raw, dict) else ():
        if not isinstance(entry, dict):
            continue
        value = nanos(entry.get("value"))
        if value is not None:
            out[str(name)] = Capacity(value, _policy(entry.get("requestPolicy")))
    return out


def requested(raw: Any) -> tuple[tuple[str, int], ...]:
    """A request's ``capacity.requests`` in nano units, sorted by name."""
    requests = raw.get("requests") if isinstance(raw, dict) else None
    out = []
    for name, value in requests.items() if isinstance(requests, dict) else ():
        amount = nanos(value)
        if amount is not None:
            out.append((str(name), amount))
    return tuple(sorted(out))


def _round_up_range(amount: int, policy: Policy) -> int:
    if amount < policy.min:
        return policy.min
    if policy.step is None:
        return amount
    low, step = units(policy.min), units(policy.step)
    if step <= 0:
        return amount
    n = -(-(units(amount) - low) // step)
    return (low + step * n) * NANO


def _round_up_values(amount: int, values: tuple[int, ...]) -> int:
    for value in values:
        if amount <= value:
            return value
    return amount


def consumed(amount: int | None, capacity: Capacity) -> int:
    """What one request takes of the capacity; ``amount`` None when it does not ask for it."""
    policy = capacity.policy
    if amount is None:
        return (
            policy.default if policy is not None and policy.default is not None else capacity.value
        )
    if policy is None:
        return amount
    if policy.ranged:
        return _round_up_range(amount, policy)
    if policy.valid_values:
        return _round_up_values(amount, policy.valid_values)
    return amount


def violates(amount: int, policy: Policy | None) -> bool:
    """Whether an amount (after rounding) is one the policy does not allow."""
    if policy is None or (policy.default is not None and amount == policy.default):
        return False
    if policy.ranged:
        if policy.max is not None and amount > policy.max:
            return True
        if policy.step is not None:
            step = units(policy.step)
            return step > 0 and (units(amount) - units(policy.min)) % step != 0
        return False
    if policy.valid_values:
        return amount not in policy.valid_values
    return False


def share(
    requests: tuple[tuple[str, int], ...],
    capacities: Mapping[str, Capacity],
    in_use: Amounts | None = None,
) -> dict[str, int] | None:
    """What a request takes of every capacity of the device, or None when the device cannot
    serve it: a requested capacity it lacks, an amount its policy forbids, or more than is
    left given what ``in_use`` already consumes."""
    asked = dict(requests)
    if any(name not in capacities for name in asked):
        return None
    out = {}
    for name, capacity in capacities.items():
        amount = consumed(asked.get(name), capacity)
        if violates(amount, capacity.policy):
            return None
        if amount + (in_use.get(name, 0) if in_use else 0) > capacity.value:
            return None
        out[name] = amount
    return out


def quantity_text(amount: int) -> str:
    """An amount as a quantity string, the shortest exact one: whole amounts in the largest
    binary or decimal unit that divides them (``10Gi``, ``16G``, ``1536``), others as a
    decimal (``0.5``)."""
    if amount % NANO:
        whole, frac = divmod(abs(amount), NANO)
        sign = "-" if amount < 0 else ""
        return f"{sign}{whole}.{str(frac).zfill(9).rstrip('0')}"
    value = amount // NANO
    if value == 0:
        return "0"
    return min(_scaled(value, 1024, _BINARY), _scaled(value, 1000, _DECIMAL), key=len)


def _scaled(value: int, base: int, suffixes: tuple[str, ...]) -> str:
    suffix = 0
    while suffix < len(suffixes) - 1 and value % base == 0:
        value //= base
        suffix += 1
    return f"{value}{suffixes[suffix]}"

"""Kubernetes resource quantities as CEL values.

A quantity is parsed like ``resource.ParseQuantity``: a signed decimal number and a suffix
(binary ``Ki``…``Ei``, decimal ``n u m k M G T P E``, or an exponent ``e3``/``E-2``); the
magnitude is rounded up to the nano and capped at 2^63-1.

In CEL a quantity is a small map that native CEL can compare without calling back into
Python: ``@k`` is a fixed-width decimal string whose lexical order is the numeric order, and
``@c`` the canonical decimal text (``1073741824``, ``0.5``). Equal quantities have equal maps, so
``==`` works, and a quantity never equals a string or a number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

KEY = "@k"
CANONICAL = "@c"

MAX_MAGNITUDE = (1 << 63) - 1
NANO = 10**9
_OFFSET = 10**28  # larger than MAX_MAGNITUDE * NANO, so offset nanos are never negative
_KEY_WIDTH = 29

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

PATTERN = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$"
"""What ``isQuantity`` accepts; the same pattern is used natively (RE2) and here."""

_RE = re.compile(PATTERN)
_SPLIT = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$")


class QuantityError(ValueError):
    pass


@dataclass(frozen=True)
class Quantity:
    """An exact quantity: ``nanos`` is the value times 10^9."""

    nanos: int

    @property
    def key(self) -> str:
        return str(self.nanos + _OFFSET).zfill(_KEY_WIDTH)

    @property
    def canonical(self) -> str:
        sign = "-" if self.nanos < 0 else ""
        whole, frac = divmod(abs(self.nanos), NANO)
        if not frac:
            return f"{sign}{whole}"
        return f"{sign}{whole}.{str(frac).zfill(9).rstrip('0')}"

    def cel(self) -> dict[str, str]:
        return {KEY: self.key, CANONICAL: self.canonical}

    def is_integer(self) -> bool:
        return self.nanos % NANO == 0

    def __add__(self, other: Quantity) -> Quantity:
        return _capped(self.nanos + other.nanos)

    def __sub__(self, other: Quantity) -> Quantity:
        return _capped(self.nanos - other.nanos)


def _capped(nanos: int) -> Quantity:
    limit = MAX_MAGNITUDE * NANO
    return Quantity(max(-limit, min(limit, nanos)))


@lru_cache(maxsize=4096)
def parse(text: str) -> Quantity:
    """Parse a quantity string; QuantityError if it is not one."""
    if not _RE.match(text):
        raise QuantityError(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    m = _SPLIT.match(text)
    assert m is not None
    sign, whole, frac, suffix = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    value = Fraction(int(whole or "0") * 10 ** len(frac) + int(frac or "0"), 10 ** len(frac))
    if suffix in _BINARY:
        value *= 2 ** _BINARY[suffix]
    elif suffix in _DECIMAL:
        value *= Fraction(10) ** _DECIMAL[suffix]
    else:  # exponent
        value *= Fraction(10) ** int(suffix[1:])
    scaled = value * NANO
    nanos = -((-scaled.numerator) // scaled.denominator)  # round the magnitude up to the nano
    nanos = min(nanos, MAX_MAGNITUDE * NANO)
    return Quantity(-nanos if sign == "-" else nanos)


def from_int(value: int) -> Quantity:
    return _capped(value * NANO)


def from_cel(value: object) -> Quantity:
    """The inverse of ``Quantity.cel``; QuantityError for anything else."""
    if isinstance(value, dict) and isinstance(value.get(KEY), str):
        return Quantity(int(value[KEY]) - _OFFSET)
    raise QuantityError(f"no such overload: expected a quantity, got {type(value).__name__}")


ZERO_KEY = Quantity(0).key


_SI_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def serialized(value: str | int | float) -> str:
    """The text Kubernetes writes for a quantity however it was sent (``Quantity.String``):
    ``1000m`` is ``1``, ``1.5Gi`` is ``1536Mi``, ``1000`` is ``1k``, ``0.5`` is ``500m``.

    The form follows the suffix sent: binary stays binary while the value is a whole number
    of at least 1Ki (else it becomes decimal SI), an exponent stays an exponent, anything
    else is decimal SI. The number is the smallest whole mantissa whose exponent is a
    multiple of three."""
    text = value if isinstance(value, str) else repr(value)
    nanos = parse(text).nanos
    if nanos == 0:
        return "0"
    sign, magnitude = ("-" if nanos < 0 else ""), abs(nanos)
    suffix = _SPLIT.match(text).group(4)  # type: ignore[union-attr]
    if suffix in _BINARY and magnitude >= 1024 * NANO and magnitude % NANO == 0:
        mantissa, power = magnitude // NANO, 0
        while power < len(_BINARY_SUFFIX) - 1 and mantissa % 1024 == 0:
            mantissa, power = mantissa // 1024, power + 1
        return f"{sign}{mantissa}{_BINARY_SUFFIX[power]}"
    mantissa, exponent = magnitude, -9
    while mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    down = exponent % 3
    mantissa, exponent = mantissa * 10**down, exponent - down
    exponential = suffix[:1] in ("e", "E")
    if exponential or exponent not in _SI_SUFFIX:
        return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
    return f"{sign}{mantissa}{_SI_SUFFIX[exponent]}"

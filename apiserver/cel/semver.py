"""Semantic versions (semver.org 2.0.0) as CEL values.

``semver(text)`` parses strictly; ``semver(text, true)`` first normalizes the way Kubernetes'
library does (drop one leading ``v``, drop leading zeros of the three numbers, fill in a missing
minor or patch). In CEL a version is a small map: ``@k`` is a byte string whose lexical order is
semver precedence (build metadata ignored), and ``@M``/``@m``/``@p`` hold major, minor and patch.
Versions with the same precedence are equal maps; a version key (bytes) and a quantity key
(string) cannot be compared, so mixing the two is an error, as upstream.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

KEY = "@k"
MAJOR = "@M"
MINOR = "@m"
PATCH = "@p"

_NUM = r"(?:0|[1-9][0-9]*)"
_PRE_ID = r"(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD_ID = r"[0-9a-zA-Z-]+"
PATTERN = (
    rf"^({_NUM})\.({_NUM})\.({_NUM})"
    rf"(?:-({_PRE_ID}(?:\.{_PRE_ID})*))?"
    rf"(?:\+({_BUILD_ID}(?:\.{_BUILD_ID})*))?$"
)
"""Strict semver 2.0.0; used natively (RE2) for ``isSemver`` and here."""

_RE = re.compile(PATTERN)

NORMALIZED_PATTERN = (
    r"^v?[0-9]+(?:\.[0-9]+(?:\.[0-9]+"
    rf"(?:-{_PRE_ID}(?:\.{_PRE_ID})*)?"
    rf"(?:\+{_BUILD_ID}(?:\.{_BUILD_ID})*)?)?)?$"
)
"""What ``isSemver(text, true)`` accepts."""

_INT64_MAX = (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1


class SemverError(ValueError):
    pass


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()

    @property
    def key(self) -> bytes:
        out = b"".join(str(n).zfill(20).encode() for n in (self.major, self.minor, self.patch))
        if not self.prerelease:
            return out + b"1"
        parts = []
        for ident in self.prerelease:
            if ident.isdigit():
                parts.append(b"0" + ident.zfill(20).encode())
            else:
                parts.append(b"1" + ident.encode())
        # "!" sorts below every identifier character, so a shorter run of identifiers
        # sorts first; not NUL, which the library's conversion of bytes cuts off.
        return out + b"0" + b"!".join(parts)

    def cel(self) -> dict[str, object]:
        return {
            KEY: self.key,
            MAJOR: min(self.major, _INT64_MAX),
            MINOR: min(self.minor, _INT64_MAX),
            PATCH: min(self.patch, _INT64_MAX),
        }


@lru_cache(maxsize=4096)
def parse(text: str, normalize: bool = False) -> Version:
    """Parse a version; SemverError if it is not one."""
    if normalize:
        text = _normalize(text)
    m = _RE.match(text)
    if not m:
        raise SemverError(f"invalid semantic version: {text!r}")
    numbers = [int(m.group(i)) for i in (1, 2, 3)]
    if any(n > _UINT64_MAX for n in numbers):
        raise SemverError(f"invalid semantic version: {text!r}: number out of range")
    for ident in (m.group(4) or "").split("."):
        if ident.isdigit() and int(ident) > _UINT64_MAX:
            raise SemverError(f"invalid semantic version: {text!r}: number out of range")
    pre = tuple(m.group(4).split(".")) if m.group(4) else ()
    return Version(numbers[0], numbers[1], numbers[2], pre)


def _normalize(text: str) -> str:
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or not p[0].isdigit():
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def is_valid(text: str, normalize: bool = False) -> bool:
    try:
        parse(text, normalize)
    except SemverError:
        return False
    return True

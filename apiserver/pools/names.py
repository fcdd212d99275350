"""Stable, valid names and uids of the computed ResourcePool objects.

A pool is (driver, pool name): a driver is a DNS subdomain of at most 63 characters, a pool
name one or more DNS subdomains joined by ``/``, at most 253 characters. The readable name
is ``<driver>.<pool name>``, a DNS subdomain when the pool name has no ``/`` and the whole
fits in 253 characters. Otherwise — and for every pool whose readable name another pool
shares (``a.b`` + ``c`` and ``a`` + ``b.c``) — the name is the hashed form:
``<driver>.<pool name, '/' as '.', cut to fit>.<16 hex digits of SHA-256("driver/pool")>``,
still a DNS subdomain, unique unless SHA-256 collides. Which pools share a readable name is
the view's to know (``readable_name`` is what they share); the name of a pool depends only
on the set of pools, never on the order they arrived in.

The uid is a UUID derived from the driver and pool name, the same on every replica and
across restarts.
"""

from __future__ import annotations

import hashlib
import re
import uuid

from ..toolkit.names import MAX_NAME

DIGEST = 16
_UIDS = uuid.UUID("0c6d7f1e-5677-4c6b-9a3e-5677c0de5677")
_TRIM = re.compile(r"[.-]+$")


def readable_name(driver: str, pool: str) -> str | None:
    """``<driver>.<pool>`` when that is a valid name, else None (the hashed form applies)."""
    name = f"{driver}.{pool}"
    return name if "/" not in pool and len(name) <= MAX_NAME else None


def hashed_name(driver: str, pool: str) -> str:
    digest = hashlib.sha256(f"{driver}/{pool}".encode()).hexdigest()[:DIGEST]
    room = MAX_NAME - len(driver) - DIGEST - 2
    middle = _TRIM.sub("", pool.replace("/", ".")[:room])
    return f"{driver}.{middle}.{digest}" if middle else f"{driver}.{digest}"


def pool_object_uid(driver: str, pool: str) -> str:
    return str(uuid.uuid5(_UIDS, f"{driver}/{pool}"))

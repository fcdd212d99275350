"""Stable, valid names and uids of the computed Device objects.

``<slice name>.<device name>``: a slice name is a DNS subdomain and a device name a DNS
label, so the result is a DNS subdomain, and since the device name is its last label it is
unambiguous. Past 253 characters: ``<device name>.<16 hex digits of SHA-256("slice/device")>``.
The uid is a UUID derived from the slice's uid and the device name, so it is the same on
every replica and across restarts, and a recreated slice gives new uids.
"""

from __future__ import annotations

import hashlib
import uuid

from ..toolkit.names import MAX_NAME

_UIDS = uuid.UUID("5b0e9c0e-4bd7-4a1e-9a61-5027c0de5027")


def device_object_name(slice_name: str, device_name: str) -> str:
    name = f"{slice_name}.{device_name}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(f"{slice_name}/{device_name}".encode()).hexdigest()[:16]
    return f"{device_name}.{digest}"


def device_object_uid(slice_uid: str, device_name: str) -> str:
    """``uuid.uuid5(_UIDS, "slice uid/device")``, computed without building UUID objects
    (several times faster, and it runs once per device)."""
    digest = bytearray(hashlib.sha1(_UIDS.bytes + f"{slice_uid}/{device_name}".encode()).digest())
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest[:16].hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

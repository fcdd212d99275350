"""Protobuf request bodies: the k8s envelope and a Namespace as kubectl encodes it, other kinds
415, malformed bytes 400."""

from __future__ import annotations

import pytest

from apiserver.machinery.decoding import decode_body
from apiserver.machinery.errors import StatusError
from apiserver.machinery.protobuf import MAGIC, MEDIA_TYPE


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, value: bytes | int) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field(1, api_version.encode()) + field(2, kind.encode())
    return MAGIC + field(1, type_meta) + field(2, raw) + field(4, MEDIA_TYPE.encode())


def test_namespace_as_kubectl_create_sends_it() -> None:
    labels = field(1, b"team") + field(2, b"a")
    meta = field(1, b"team-a") + field(11, labels) + field(14, b"example.com/hold") + field(7, 3)
    raw = field(1, meta) + field(2, b"") + field(3, field(1, b"Active")) + field(9, b"ignored")
    obj = decode_body(envelope("v1", "Namespace", raw), MEDIA_TYPE)
    assert obj == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"team": "a"}, "finalizers": ["example.com/hold"]},
        "spec": {},
        "status": {"phase": "Active"},
    }


def test_other_kinds_are_unsupported_media() -> None:
    with pytest.raises(StatusError) as err:
        decode_body(envelope("v1", "Pod", field(1, field(1, b"p"))), MEDIA_TYPE)
    assert err.value.code == 415


def test_a_body_without_the_protobuf_envelope_is_unsupported_media() -> None:
    """JSON (or anything else) sent under the protobuf media type is not read as JSON."""
    with pytest.raises(StatusError) as err:
        decode_body(b"not protobuf", MEDIA_TYPE)
    assert err.value.code == 415


@pytest.mark.parametrize(
    "body",
    [
        MAGIC + b"\x0a\x50",  # a length past the end
        MAGIC + b"\x0a",  # a truncated varint
        envelope("v1", "Namespace", field(1, field(1, b"\xff\xfe"))),  # a name that is not UTF-8
    ],
)
def test_malformed_bodies_are_bad_requests(body: bytes) -> None:
    with pytest.raises(StatusError) as err:
        decode_body(body, MEDIA_TYPE)
    assert err.value.code == 400

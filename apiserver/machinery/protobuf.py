"""Request bodies in Kubernetes' protobuf encoding, for the built-in kinds clients send so.

kubectl's typed commands (``kubectl create namespace``, ``create rolebinding``, ``auth
can-i``…) send built-in kinds as ``application/vnd.kubernetes.protobuf``; the body is read
into the JSON form and handled from there like any other. Responses stay JSON, which such
clients also accept. A kind with no protobuf shape here is answered 415, so the client
knows to send JSON.
"""

from __future__ import annotations

from typing import Any

from ..api import PROTOBUF_MAGIC as MAGIC
from ..api import Message, ProtobufError
from ..api import decode_protobuf as decode
from ..api import protobuf_envelope as envelope
from ..api.authentication import KINDS as AUTHENTICATION_KINDS
from ..api.authorization import KINDS as AUTHORIZATION_KINDS
from ..api.core import KINDS as CORE_KINDS
from ..api.rbac import KINDS as RBAC_KINDS
from . import errors

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
KINDS: dict[tuple[str, str], Message] = {
    **CORE_KINDS,
    **RBAC_KINDS,
    **AUTHORIZATION_KINDS,
    **AUTHENTICATION_KINDS,
}

__all__ = ["KINDS", "MAGIC", "MEDIA_TYPE", "decode_object"]


def decode_object(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object; 400 if it is malformed, 415 for a kind
    this server does not read in protobuf (or a body that is no Kubernetes protobuf object,
    such as JSON sent under the protobuf media type)."""
    if not body.startswith(MAGIC):
        raise errors.unsupported_media_type(MEDIA_TYPE, ["application/json", "application/yaml"])
    try:
        wrapped = envelope(body)
        shape = KINDS.get((wrapped.api_version, wrapped.kind))
        if shape is None:
            raise errors.unsupported_media_type(
                MEDIA_TYPE, ["application/json", "application/yaml"]
            )
        obj = decode(shape, wrapped.raw)
    except ProtobufError as err:
        raise errors.bad_request(f"the request body could not be decoded: {err}") from err
    return {"apiVersion": wrapped.api_version, "kind": wrapped.kind, **obj}

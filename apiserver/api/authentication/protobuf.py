"""The protobuf shapes of ``authentication.k8s.io/v1`` reviews (numbers as upstream's proto)."""

from __future__ import annotations

from ..protobuf import OBJECT_META, Message, message
from .group import AUTHENTICATION_GROUP, AUTHENTICATION_VERSION

_API = f"{AUTHENTICATION_GROUP}/{AUTHENTICATION_VERSION}"
KINDS: dict[tuple[str, str], Message] = {
    (_API, "TokenReview"): message(
        metadata=(1, OBJECT_META),
        spec=(2, message(token=(1, "string"), audiences=(2, "string", True))),
    ),
    (_API, "SelfSubjectReview"): message(metadata=(1, OBJECT_META)),
}

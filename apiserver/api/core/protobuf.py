"""The protobuf shapes of the core ``v1`` kinds kubectl sends that way (numbers as upstream's
proto): Namespace, for ``kubectl create namespace``."""

from __future__ import annotations

from ..protobuf import OBJECT_META, Message, message

NAMESPACE = message(
    metadata=(1, OBJECT_META),
    spec=(2, message(finalizers=(1, "string", True))),
    status=(3, message(phase=(1, "string"))),
)
KINDS: dict[tuple[str, str], Message] = {("v1", "Namespace"): NAMESPACE}

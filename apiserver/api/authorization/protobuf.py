"""The protobuf shapes of ``authorization.k8s.io/v1`` reviews (numbers as upstream's proto)."""

from __future__ import annotations

from ..protobuf import OBJECT_META, Message, message
from .group import AUTHORIZATION_GROUP, AUTHORIZATION_VERSION

SELECTOR_ATTRIBUTES = message(rawSelector=(1, "string"))
RESOURCE_ATTRIBUTES = message(
    namespace=(1, "string"),
    verb=(2, "string"),
    group=(3, "string"),
    version=(4, "string"),
    resource=(5, "string"),
    subresource=(6, "string"),
    name=(7, "string"),
    fieldSelector=(8, SELECTOR_ATTRIBUTES),
    labelSelector=(9, SELECTOR_ATTRIBUTES),
)
NON_RESOURCE_ATTRIBUTES = message(path=(1, "string"), verb=(2, "string"))
SELF_SPEC = message(
    resourceAttributes=(1, RESOURCE_ATTRIBUTES), nonResourceAttributes=(2, NON_RESOURCE_ATTRIBUTES)
)
SUBJECT_SPEC = message(
    resourceAttributes=(1, RESOURCE_ATTRIBUTES),
    nonResourceAttributes=(2, NON_RESOURCE_ATTRIBUTES),
    user=(3, "string"),
    groups=(4, "string", True),
    extra=(5, "extra"),
    uid=(6, "string"),
)

_API = f"{AUTHORIZATION_GROUP}/{AUTHORIZATION_VERSION}"
KINDS: dict[tuple[str, str], Message] = {
    (_API, "SubjectAccessReview"): message(metadata=(1, OBJECT_META), spec=(2, SUBJECT_SPEC)),
    (_API, "SelfSubjectAccessReview"): message(metadata=(1, OBJECT_META), spec=(2, SELF_SPEC)),
    (_API, "SelfSubjectRulesReview"): message(
        metadata=(1, OBJECT_META), spec=(2, message(namespace=(1, "string")))
    ),
}

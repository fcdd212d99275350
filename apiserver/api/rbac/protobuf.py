"""The protobuf shapes of ``rbac.authorization.k8s.io/v1`` (numbers as upstream's proto)."""

from __future__ import annotations

from ..protobuf import LABEL_SELECTOR, OBJECT_META, Message, message
from .group import RBAC_GROUP, RBAC_VERSION

POLICY_RULE = message(
    verbs=(1, "string", True),
    apiGroups=(2, "string", True),
    resources=(3, "string", True),
    resourceNames=(4, "string", True),
    nonResourceURLs=(5, "string", True),
)
SUBJECT = message(
    kind=(1, "string"), apiGroup=(2, "string"), name=(3, "string"), namespace=(4, "string")
)
ROLE_REF = message(apiGroup=(1, "string"), kind=(2, "string"), name=(3, "string"))
ROLE = message(metadata=(1, OBJECT_META), rules=(2, POLICY_RULE, True))
CLUSTER_ROLE = message(
    metadata=(1, OBJECT_META),
    rules=(2, POLICY_RULE, True),
    aggregationRule=(3, message(clusterRoleSelectors=(1, LABEL_SELECTOR, True))),
)
BINDING = message(metadata=(1, OBJECT_META), subjects=(2, SUBJECT, True), roleRef=(3, ROLE_REF))

_API = f"{RBAC_GROUP}/{RBAC_VERSION}"
KINDS: dict[tuple[str, str], Message] = {
    (_API, "Role"): ROLE,
    (_API, "ClusterRole"): CLUSTER_ROLE,
    (_API, "RoleBinding"): BINDING,
    (_API, "ClusterRoleBinding"): BINDING,
}

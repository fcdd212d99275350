"""api/protobuf.py: the built-in kinds kubectl sends in protobuf (RBAC, reviews) read into JSON.

The bodies are built here with a small encoder following the protobuf wire format and the
field numbers of upstream's generated.proto, the way client-go writes them (every scalar
written, even when empty)."""

from __future__ import annotations

import pytest

from apiserver.machinery.decoding import decode_body
from apiserver.machinery.errors import StatusError
from apiserver.machinery.protobuf import MEDIA_TYPE as PROTOBUF


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def string(number: int, value: str | bytes) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def number(field: int, value: int) -> bytes:
    return varint(field << 3) + varint(value)


def wrap(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = string(1, api_version) + string(2, kind)
    return b"k8s\x00" + string(1, type_meta) + string(2, raw) + string(3, "") + string(4, "")


def test_cluster_role_binding_as_kubectl_sends_it() -> None:
    meta = string(1, "grace-pools") + string(2, "") + string(3, "") + number(7, 0)
    meta += string(11, string(1, "team") + string(2, "a"))
    subject = string(1, "User") + string(2, "rbac.authorization.k8s.io") + string(3, "grace")
    subject += string(4, "")
    role_ref = string(1, "rbac.authorization.k8s.io") + string(2, "ClusterRole")
    role_ref += string(3, "pool-status-reader")
    raw = string(1, meta) + string(2, subject) + string(3, role_ref)
    body = wrap("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", raw)
    assert decode_body(body, PROTOBUF) == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "grace-pools", "labels": {"team": "a"}},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "grace"}],
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "pool-status-reader",
        },
    }


def test_rules_keep_empty_strings_inside_lists() -> None:
    rule = string(1, "get") + string(2, "") + string(3, "pods")
    raw = string(1, string(1, "r") + string(3, "ns")) + string(2, rule)
    body = wrap("rbac.authorization.k8s.io/v1", "Role", raw)
    assert decode_body(body, PROTOBUF)["rules"] == [
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}
    ]


def test_self_subject_access_review_as_can_i_sends_it() -> None:
    attributes = string(1, "default") + string(2, "list") + string(3, "resource.k8s.io")
    attributes += string(4, "") + string(5, "resourceclaims") + string(6, "") + string(7, "")
    raw = string(1, b"") + string(2, string(1, attributes))
    body = wrap("authorization.k8s.io/v1", "SelfSubjectAccessReview", raw)
    assert decode_body(body, PROTOBUF)["spec"] == {
        "resourceAttributes": {
            "namespace": "default",
            "verb": "list",
            "group": "resource.k8s.io",
            "resource": "resourceclaims",
        }
    }


def test_subject_access_review_extra() -> None:
    extra = string(5, string(1, "scopes") + string(2, string(1, "a") + string(1, "b")))
    spec = string(2, string(1, "/metrics") + string(2, "get")) + string(3, "bob") + extra
    body = wrap("authorization.k8s.io/v1", "SubjectAccessReview", string(2, spec))
    assert decode_body(body, PROTOBUF)["spec"] == {
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
        "user": "bob",
        "extra": {"scopes": ["a", "b"]},
    }


def test_kind_without_a_protobuf_shape_is_415() -> None:
    body = wrap("v1", "Pod", string(1, string(1, "p")))
    with pytest.raises(StatusError) as caught:
        decode_body(body, PROTOBUF)
    assert caught.value.code == 415


@pytest.mark.parametrize(
    "body",
    [
        b"k8s\x00" + varint(1 << 3 | 2) + varint(50) + b"short",
        wrap("rbac.authorization.k8s.io/v1", "Role", string(1, b"\xff\xfe")),
    ],
)
def test_malformed_bodies_are_400(body: bytes) -> None:
    with pytest.raises(StatusError) as caught:
        decode_body(body, PROTOBUF)
    assert caught.value.code == 400

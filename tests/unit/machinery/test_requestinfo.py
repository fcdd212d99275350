"""RequestInfo: the verb, resource, namespace, name and subresource of a request path."""

from __future__ import annotations

import pytest

from apiserver.machinery import RequestInfo, parse_request
from apiserver.machinery.errors import StatusError

RSP = "resourceslicepatches"


@pytest.mark.parametrize(
    ("method", "segments", "watch", "expected"),
    [
        ("GET", [RSP], None, RequestInfo("list", RSP)),
        ("GET", [RSP], "false", RequestInfo("list", RSP)),
        ("GET", [RSP], "true", RequestInfo("watch", RSP)),
        ("GET", [RSP], "1", RequestInfo("watch", RSP)),
        ("GET", [RSP], "True", RequestInfo("watch", RSP)),
        ("HEAD", [RSP], None, RequestInfo("list", RSP)),
        ("get", [RSP, "p"], None, RequestInfo("get", RSP, name="p")),
        ("GET", [RSP, "p"], "true", RequestInfo("get", RSP, name="p")),
        ("GET", [RSP, "p", "status"], None, RequestInfo("get", RSP, None, "p", "status")),
        ("POST", [RSP], None, RequestInfo("create", RSP)),
        ("PUT", [RSP, "p"], None, RequestInfo("update", RSP, name="p")),
        ("PUT", [RSP, "p", "status"], None, RequestInfo("update", RSP, None, "p", "status")),
        ("PATCH", [RSP, "p"], None, RequestInfo("patch", RSP, name="p")),
        ("PATCH", [RSP, "p", "status"], None, RequestInfo("patch", RSP, None, "p", "status")),
        ("DELETE", [RSP, "p"], None, RequestInfo("delete", RSP, name="p")),
        ("DELETE", [RSP], None, RequestInfo("deletecollection", RSP)),
        (
            "GET",
            ["namespaces", "ns1", "resourceclaims"],
            None,
            RequestInfo("list", "resourceclaims", "ns1"),
        ),
        (
            "GET",
            ["namespaces", "ns1", "resourceclaims"],
            "true",
            RequestInfo("watch", "resourceclaims", "ns1"),
        ),
        (
            "PUT",
            ["namespaces", "ns1", "resourceclaims", "c", "status"],
            None,
            RequestInfo("update", "resourceclaims", "ns1", "c", "status"),
        ),
        (
            "DELETE",
            ["namespaces", "ns1", "resourceclaims"],
            None,
            RequestInfo("deletecollection", "resourceclaims", "ns1"),
        ),
        # The namespaces resource itself, not a namespace scope.
        ("GET", ["namespaces"], None, RequestInfo("list", "namespaces")),
        ("GET", ["namespaces", "ns1"], None, RequestInfo("get", "namespaces", name="ns1")),
        # A Namespace's own subresources, not resources in the namespace.
        (
            "PUT",
            ["namespaces", "ns1", "status"],
            None,
            RequestInfo("update", "namespaces", None, "ns1", "status"),
        ),
        (
            "PUT",
            ["namespaces", "ns1", "finalize"],
            None,
            RequestInfo("update", "namespaces", None, "ns1", "finalize"),
        ),
    ],
)
def test_parse_request(
    method: str, segments: list[str], watch: str | None, expected: RequestInfo
) -> None:
    assert parse_request(method, segments, watch_param=watch) == expected


@pytest.mark.parametrize(
    "segments",
    [
        [],
        [""],
        [RSP, ""],
        [RSP, "p", "status", "extra"],
        ["namespaces", "ns1", "resourceclaims", "c", "status", "x"],
        [RSP, "", "status"],
    ],
)
def test_unknown_paths_are_404(segments: list[str]) -> None:
    with pytest.raises(StatusError) as info:
        parse_request("GET", segments, watch_param=None)
    assert (info.value.code, info.value.reason) == (404, "NotFound")


@pytest.mark.parametrize(
    ("method", "segments"),
    [
        ("POST", [RSP, "p"]),
        ("PUT", [RSP]),
        ("PATCH", [RSP]),
        ("OPTIONS", [RSP]),
        ("CONNECT", [RSP, "p"]),
    ],
)
def test_verbs_that_do_not_fit_the_path_are_405(method: str, segments: list[str]) -> None:
    with pytest.raises(StatusError) as info:
        parse_request(method, segments, watch_param=None)
    assert (info.value.code, info.value.reason) == (405, "MethodNotAllowed")
    assert f'on resources of kind "{RSP}"' in info.value.message


def test_an_empty_namespace_segment_is_not_found() -> None:
    """``/namespaces//events`` names no namespace: 404, not a list across all of them."""
    with pytest.raises(StatusError) as caught:
        parse_request("GET", ["namespaces", "", "events"], watch_param=None)
    assert caught.value.code == 404

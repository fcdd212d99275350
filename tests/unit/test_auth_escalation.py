"""auth/rbac/escalation.py: whether a user's rules cover rules it wants to grant, as
Kubernetes' escalation check decides it."""

from __future__ import annotations

import pytest

from apiserver.auth.rbac.escalation import breakdown, describe, uncovered
from apiserver.auth.rbac.rules import Rule


def r(verbs: str, groups: str = "", resources: str = "", names: str = "", urls: str = "") -> Rule:
    def split(text: str) -> tuple[str, ...]:
        return tuple(text.split(",")) if text else ()

    return Rule(
        split(verbs),
        tuple(groups.split(",")) if resources else (),
        split(resources),
        split(names),
        split(urls),
    )


def test_breakdown() -> None:
    assert breakdown(r("get,list", "", "pods,services")) == [
        r("get", "", "pods"),
        r("get", "", "services"),
        r("list", "", "pods"),
        r("list", "", "services"),
    ]
    assert breakdown(r("get", urls="/a,/b")) == [r("get", urls="/a"), r("get", urls="/b")]


@pytest.mark.parametrize(
    ("owner", "wanted", "covered"),
    [
        ([r("*", "*", "*")], [r("get,delete", "apps", "deployments")], True),
        ([r("get,list", "", "pods")], [r("get", "", "pods")], True),
        ([r("get", "", "pods")], [r("get,delete", "", "pods")], False),
        ([r("get", "", "pods")], [r("*", "", "pods")], False),  # '*' is not "every verb I have"
        ([r("get", "", "*/status")], [r("get", "", "pods/status")], True),
        ([r("get", "", "pods")], [r("get", "", "pods/status")], False),
        ([r("get", "", "pods", "a")], [r("get", "", "pods", "a")], True),
        ([r("get", "", "pods", "a")], [r("get", "", "pods")], False),
        ([r("get", "", "pods")], [r("get", "", "pods", "a")], True),
        ([r("get", urls="/logs/*")], [r("get", urls="/logs/kube")], True),
        ([r("get", urls="/logs")], [r("get", urls="/logs/kube")], False),
        ([r("get", "", "pods"), r("list", "", "pods")], [r("get,list", "", "pods")], True),
    ],
)
def test_covers(owner: list[Rule], wanted: list[Rule], covered: bool) -> None:
    assert (uncovered(owner, wanted) == []) is covered


def test_describe_as_upstream_prints_it() -> None:
    assert describe(r("get", "", "pods", "a")) == (
        '{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get"]}'
    )

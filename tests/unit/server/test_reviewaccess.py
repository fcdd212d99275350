"""server/reviewaccess.py: what an AllocationReview asks the authorizer before it runs —
``get`` on each stored claim it names (resource.k8s.io/v1, its namespace and name), nothing
for an inline spec, ``create`` on devicereservations in the server's group to reserve — and
that a refusal is a 403 worded from the request alone, raised before the reviewer runs."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from apiserver.api.resource import AllocationReview
from apiserver.auth import Authorization, Decision, RequestAttributes
from apiserver.machinery import errors
from apiserver.machinery.user import UserInfo
from apiserver.server.reviewaccess import authorized_reviews, check_review_access

GROUP = "resource.x-k8s.io"
ALICE = UserInfo("alice", groups=("system:authenticated",))
INLINE = {
    "name": "inline",
    "spec": {
        "devices": {
            "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 1}}]
        }
    },
}


class _Recording:
    """Allows what ``allowed`` lists as (verb, resource, namespace, name); records each ask."""

    def __init__(self, allowed: set[tuple[str, str, str, str]]) -> None:
        self.allowed = allowed
        self.asked: list[RequestAttributes] = []

    async def authorize(self, attributes: RequestAttributes) -> Authorization:
        self.asked.append(attributes)
        key = (attributes.verb, attributes.resource, attributes.namespace, attributes.name)
        return Authorization(Decision.ALLOW if key in self.allowed else Decision.NO_OPINION)


def _review(*claims: dict[str, Any], reserve: bool = False) -> AllocationReview:
    spec: dict[str, Any] = {"claims": list(claims)}
    if reserve:
        spec["reserve"] = True
    return AllocationReview.model_validate(
        {"apiVersion": f"{GROUP}/v1alpha3", "kind": "AllocationReview", "spec": spec}
    )


async def test_each_named_claim_is_asked_for_get_and_inline_specs_for_nothing() -> None:
    authorizer = _Recording(
        {("get", "resourceclaims", "a", "one"), ("get", "resourceclaims", "b", "two")}
    )
    review = _review({"namespace": "a", "name": "one"}, INLINE, {"namespace": "b", "name": "two"})
    await check_review_access(review, ALICE, authorizer, GROUP)
    asked = [
        (a.verb, a.api_group, a.api_version, a.resource, a.namespace, a.name)
        for a in authorizer.asked
    ]
    assert asked == [
        ("get", "resource.k8s.io", "v1", "resourceclaims", "a", "one"),
        ("get", "resource.k8s.io", "v1", "resourceclaims", "b", "two"),
    ]
    assert all(a.user == ALICE and a.resource_request for a in authorizer.asked)


async def test_a_claim_not_allowed_is_403_naming_only_what_was_sent() -> None:
    authorizer = _Recording({("get", "resourceclaims", "a", "one")})
    review = _review({"namespace": "a", "name": "one"}, {"namespace": "b", "name": "two"})
    with pytest.raises(errors.StatusError) as refused:
        await check_review_access(review, ALICE, authorizer, GROUP)
    assert refused.value.code == 403
    body = orjson.loads(refused.value.body())
    assert body["reason"] == "Forbidden"
    assert body["details"] == {"kind": "resourceclaims", "name": "two", "group": "resource.k8s.io"}
    assert '"alice"' in body["message"]
    assert 'namespace "b"' in body["message"]


async def test_reserving_asks_create_on_devicereservations_in_the_servers_group() -> None:
    authorizer = _Recording(set())
    with pytest.raises(errors.StatusError) as refused:
        await check_review_access(_review(INLINE, reserve=True), ALICE, authorizer, GROUP)
    assert refused.value.code == 403
    [asked] = authorizer.asked
    assert (asked.verb, asked.api_group, asked.resource, asked.namespace) == (
        "create",
        GROUP,
        "devicereservations",
        "",
    )
    allowed = _Recording({("create", "devicereservations", "", "")})
    await check_review_access(_review(INLINE, reserve=True), ALICE, allowed, GROUP)


async def test_the_reviewer_runs_only_after_the_checks_pass() -> None:
    ran: list[AllocationReview] = []

    async def reviewer(obj: AllocationReview, user: UserInfo) -> dict[str, Any]:
        ran.append(obj)
        return {"nodes": []}

    guarded = authorized_reviews(reviewer, _Recording(set()), GROUP)
    with pytest.raises(errors.StatusError):
        await guarded(_review({"namespace": "a", "name": "one"}), ALICE)
    assert ran == []
    assert await guarded(_review(INLINE), ALICE) == {"nodes": []}
    assert len(ran) == 1

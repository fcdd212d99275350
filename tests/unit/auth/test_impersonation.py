"""auth/impersonation.py: who a request runs as when it sends Impersonate-* headers, and
the checks made, as Kubernetes' impersonation filter makes them."""

from __future__ import annotations

import pytest

from apiserver.auth import Credentials, UserInfo
from apiserver.auth.impersonation import impersonate, wants_impersonation
from apiserver.auth.rbac import RBACAuthorizer, RBACIndex
from apiserver.machinery import errors
from apiserver.machinery.user import AUTHENTICATED, UNAUTHENTICATED

JUDY = UserInfo("judy", groups=(AUTHENTICATED,))


def authorizer() -> RBACAuthorizer:
    index = RBACIndex()
    index.upsert(
        {
            "kind": "ClusterRole",
            "metadata": {"name": "imp"},
            "rules": [
                {
                    "verbs": ["impersonate"],
                    "apiGroups": [""],
                    "resources": ["users"],
                    "resourceNames": ["bob", "system:anonymous"],
                },
                {
                    "verbs": ["impersonate"],
                    "apiGroups": [""],
                    "resources": ["groups"],
                    "resourceNames": ["g1"],
                },
                {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["uids"]},
                {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["userextras/scopes"]},
                {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["serviceaccounts"]},
            ],
        }
    )
    index.upsert(
        {
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "judy-imp"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "imp",
            },
            "subjects": [{"kind": "User", "name": "judy"}],
        }
    )
    return RBACAuthorizer(index)


def creds(*headers: tuple[str, str]) -> Credentials:
    return Credentials((("authorization", "Bearer t"), *headers))


def test_wants_impersonation_only_with_the_headers() -> None:
    assert not wants_impersonation(creds())
    assert wants_impersonation(creds(("impersonate-user", "bob")))


async def test_user_and_group() -> None:
    who = await impersonate(
        JUDY, creds(("impersonate-user", "bob"), ("impersonate-group", "g1")), authorizer()
    )
    assert who == UserInfo("bob", "", ("g1", AUTHENTICATED), {})


async def test_uid_and_extra() -> None:
    who = await impersonate(
        JUDY,
        creds(
            ("impersonate-user", "bob"),
            ("impersonate-uid", "1234"),
            ("impersonate-extra-scopes", "view"),
            ("impersonate-extra-scopes", "edit"),
        ),
        authorizer(),
    )
    assert who.uid == "1234"
    assert dict(who.extra) == {"scopes": ("view", "edit")}


async def test_service_account_gets_its_groups() -> None:
    who = await impersonate(
        JUDY, creds(("impersonate-user", "system:serviceaccount:ns1:robot")), authorizer()
    )
    assert who.groups == ("system:serviceaccounts", "system:serviceaccounts:ns1", AUTHENTICATED)


async def test_anonymous_is_unauthenticated() -> None:
    who = await impersonate(JUDY, creds(("impersonate-user", "system:anonymous")), authorizer())
    assert who.groups == (UNAUTHENTICATED,)


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        (
            (("impersonate-user", "alice"),),
            'users "alice" is forbidden: User "judy" cannot impersonate resource "users" in API'
            ' group "" at the cluster scope',
        ),
        (
            (("impersonate-user", "bob"), ("impersonate-group", "system:masters")),
            'groups "system:masters" is forbidden: User "judy" cannot impersonate resource'
            ' "groups" in API group "" at the cluster scope',
        ),
        (
            (("impersonate-user", "bob"), ("impersonate-extra-team", "a")),
            'userextras "a" is forbidden: User "judy" cannot impersonate resource'
            ' "userextras/team" in API group "" at the cluster scope',
        ),
    ],
)
async def test_refused(headers: tuple[tuple[str, str], ...], message: str) -> None:
    with pytest.raises(errors.StatusError) as caught:
        await impersonate(JUDY, creds(*headers), authorizer())
    assert caught.value.code == 403
    assert caught.value.message == message


async def test_someone_without_the_right_is_refused() -> None:
    with pytest.raises(errors.StatusError) as caught:
        await impersonate(
            UserInfo("bob", groups=(AUTHENTICATED,)),
            creds(("impersonate-user", "bob")),
            authorizer(),
        )
    assert caught.value.code == 403


async def test_groups_without_a_user_is_a_bad_request() -> None:
    with pytest.raises(errors.StatusError) as caught:
        await impersonate(JUDY, creds(("impersonate-group", "g1")), authorizer())
    assert caught.value.code == 400

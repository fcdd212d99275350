"""Impersonation: ``Impersonate-User``, ``-Group``, ``-Uid`` and ``-Extra-<key>`` headers.

As Kubernetes checks it, the caller must be allowed the verb ``impersonate`` on each thing
it asks to become, in the core group: ``users`` (or ``serviceaccounts`` in the account's
namespace for ``system:serviceaccount:<ns>:<name>``), ``groups``, ``uids``, and
``userextras/<key>`` named by each value. The request then runs as the impersonated user,
who is in ``system:authenticated`` (``system:unauthenticated`` for ``system:anonymous``), and
in the service-account groups when it is one and no groups were asked for.
"""

from __future__ import annotations

from urllib.parse import unquote

from ..machinery import errors
from ..machinery.user import (
    ANONYMOUS,
    AUTHENTICATED,
    SERVICE_ACCOUNT_PREFIX,
    UNAUTHENTICATED,
    UserInfo,
)
from .authorizer import Authorizer, RequestAttributes, forbidden
from .credentials import Credentials

USER = "impersonate-user"
GROUP = "impersonate-group"
UID = "impersonate-uid"
EXTRA_PREFIX = "impersonate-extra-"


def wants_impersonation(credentials: Credentials) -> bool:
    return any(k.startswith("impersonate-") for k, _ in credentials.headers)


def _check(
    user: UserInfo, resource: str, name: str, *, namespace: str = "", subresource: str = ""
) -> RequestAttributes:
    return RequestAttributes(
        user=user,
        verb="impersonate",
        resource_request=True,
        namespace=namespace,
        resource=resource,
        subresource=subresource,
        name=name,
        api_version="v1",
    )


async def impersonate(user: UserInfo, credentials: Credentials, authorizer: Authorizer) -> UserInfo:
    """The user to run the request as; raises a ``StatusError`` (400 or 403) when the
    headers ask for something malformed or something ``user`` may not impersonate."""
    name = credentials.header(USER)
    groups = [g for g in credentials.header_values(GROUP) if g]
    uid = credentials.header(UID)
    extra: dict[str, list[str]] = {}
    for key, value in credentials.headers:
        if key.startswith(EXTRA_PREFIX):
            extra.setdefault(unquote(key[len(EXTRA_PREFIX) :]).lower(), []).append(value)
    if not name:
        raise errors.bad_request(
            "requested impersonation of groups, uid or extra without impersonating a user"
        )
    checks: list[RequestAttributes] = [_check(user, "groups", g) for g in groups]
    if name.startswith(SERVICE_ACCOUNT_PREFIX) and name.count(":") == 3:
        namespace, account = name[len(SERVICE_ACCOUNT_PREFIX) :].split(":", 1)
        checks.insert(0, _check(user, "serviceaccounts", account, namespace=namespace))
        if not groups:  # an account's groups follow from its name: nothing more to check
            groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    else:
        checks.insert(0, _check(user, "users", name))
    if uid is not None:
        checks.append(_check(user, "uids", uid))
    for key, values in extra.items():
        checks += [_check(user, "userextras", v, subresource=key) for v in values]
    for attributes in checks:
        decision = await authorizer.authorize(attributes)
        if not decision.allowed:
            raise forbidden(attributes, decision.reason)
    membership = UNAUTHENTICATED if name == ANONYMOUS else AUTHENTICATED
    if membership not in groups:
        groups.append(membership)
    return UserInfo(name, uid or "", tuple(groups), {k: tuple(v) for k, v in extra.items()})

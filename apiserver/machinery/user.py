"""Who is asking: the authenticated user as every layer above authentication sees it.

Kubernetes' ``user.Info``: a name, a uid, groups and extra values. Authentication makes it,
authorization decides on it, admission and ``managedFields`` read it. It lives here, below
the registries, so that admission can take the whole user and not a bare name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
MASTERS = "system:masters"
ANONYMOUS = "system:anonymous"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
"""A ServiceAccount's user name is this prefix, then ``<namespace>:<name>``."""


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.name, self.uid, self.groups, tuple(sorted(self.extra.items()))))

    def with_group(self, group: str) -> UserInfo:
        """The same user, also in ``group`` (a no-op when already in it)."""
        if group in self.groups:
            return self
        return UserInfo(self.name, self.uid, (*self.groups, group), self.extra)


NOBODY = UserInfo("")
"""The user of in-process writes (controllers) and of servers without authentication."""

"""The authenticator seam: each method says who presented credentials, or that it cannot tell.

An authenticator returns the user, or None when the request carries nothing it recognises
(or credentials it rejects). A chain asks each in turn and takes the first user, as
Kubernetes' union authenticator does; a request that no method recognises is anonymous,
which the server answers with 401 outside the public paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..machinery.user import UserInfo
from .credentials import Credentials


class Authenticator(Protocol):
    async def authenticate(self, credentials: Credentials) -> UserInfo | None: ...


class AuthenticatorChain:
    def __init__(self, methods: Sequence[Authenticator]) -> None:
        self.methods = list(methods)

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        """The first method's user."""
        for method in self.methods:
            user = await method.authenticate(credentials)
            if user is not None:
                return user
        return None

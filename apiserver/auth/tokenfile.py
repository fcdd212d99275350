"""Static bearer tokens from a CSV file, as kube-apiserver's ``--token-auth-file``.

Each line is ``token,user,uid[,"group1,group2"]``. Standalone mode generates one admin
token (group ``system:masters``) and writes it into the kubeconfig it hands to kubectl.
"""

from __future__ import annotations

import csv
import hashlib
import os
import secrets
from pathlib import Path

from ..machinery.user import AUTHENTICATED, MASTERS, UserInfo
from .credentials import Credentials


class TokenAuthenticator:
    def __init__(self, users_by_token: dict[str, UserInfo]) -> None:
        # Keyed by digest, so a lookup's timing says nothing about the tokens themselves.
        self._users = {_digest(t): u for t, u in users_by_token.items()}

    @classmethod
    def from_file(cls, path: str | Path) -> TokenAuthenticator:
        return cls(dict(read_token_file(path)))

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        return self.user_for(credentials.header("authorization"))

    def user_for(self, authorization: str | None) -> UserInfo | None:
        """The user a ``Bearer`` Authorization header names, or None."""
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return self._users.get(_digest(token.strip()))


def read_token_file(path: str | Path) -> list[tuple[str, UserInfo]]:
    """Every token of the file with its user, in file order (blank and ``#`` lines skipped)."""
    entries: list[tuple[str, UserInfo]] = []
    with open(path, newline="") as f:
        for lineno, row in enumerate(csv.reader(f), start=1):
            if not row or row[0].startswith("#"):
                continue
            if len(row) < 3 or not row[0] or not row[1]:
                raise ValueError(f"{path}:{lineno}: expected token,user,uid[,groups]")
            groups = tuple(g for g in (row[3].split(",") if len(row) > 3 else []) if g)
            if AUTHENTICATED not in groups:
                groups = (*groups, AUTHENTICATED)
            entries.append((row[0], UserInfo(row[1], row[2], groups)))
    return entries


def admin_token(entries: list[tuple[str, UserInfo]]) -> str | None:
    """The token of the first user in ``system:masters``, if there is one."""
    return next((token for token, user in entries if MASTERS in user.groups), None)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def generate_token_file(path: str | Path, user: str = "admin") -> str:
    """Write a token file with one admin token (mode 0600); return the token."""
    token = secrets.token_urlsafe(32)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # also when an existing file was more open
    with os.fdopen(fd, "w") as f:
        f.write(f'{token},{user},{user},"{MASTERS}"\n')
    return token

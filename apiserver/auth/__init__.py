"""Who is calling: authentication (and, with its issue, authorization) for both modes."""

from .middleware import AuthenticationMiddleware
from .tokens import (
    MASTERS,
    TokenAuthenticator,
    UserInfo,
    admin_token,
    generate_token_file,
    read_token_file,
)

__all__ = [
    "MASTERS",
    "AuthenticationMiddleware",
    "TokenAuthenticator",
    "UserInfo",
    "admin_token",
    "generate_token_file",
    "read_token_file",
]

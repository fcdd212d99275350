"""Who is calling: authentication (and, with its issue, authorization) for both modes."""

from .middleware import AuthenticationMiddleware
from .tokens import TokenAuthenticator, UserInfo, generate_token_file

__all__ = [
    "AuthenticationMiddleware",
    "TokenAuthenticator",
    "UserInfo",
    "generate_token_file",
]

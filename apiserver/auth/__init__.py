"""Who is calling and what they may do: authentication and authorization for both modes."""

from ..machinery.user import AUTHENTICATED, MASTERS, UserInfo
from .authenticator import Authenticator, AuthenticatorChain
from .authorizer import (
    AllowAuthenticated,
    Authorization,
    Authorizer,
    Decision,
    RequestAttributes,
    forbidden,
    request_attributes,
)
from .credentials import Credentials
from .middleware import PUBLIC_PATHS, AuthMiddleware
from .tokenfile import TokenAuthenticator, admin_token, generate_token_file, read_token_file

__all__ = [
    "AUTHENTICATED",
    "MASTERS",
    "PUBLIC_PATHS",
    "AllowAuthenticated",
    "AuthMiddleware",
    "Authenticator",
    "AuthenticatorChain",
    "Authorization",
    "Authorizer",
    "Credentials",
    "Decision",
    "RequestAttributes",
    "TokenAuthenticator",
    "UserInfo",
    "admin_token",
    "forbidden",
    "generate_token_file",
    "read_token_file",
    "request_attributes",
]

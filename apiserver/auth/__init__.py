"""Who is calling: authentication (and, with its issue, authorization) for both modes."""

from .tokens import TokenAuthenticator, UserInfo, generate_token_file

__all__ = ["TokenAuthenticator", "UserInfo", "generate_token_file"]

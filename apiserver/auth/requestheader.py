"""Front-proxy (request-header) authentication: the user the aggregator names in headers.

kube-apiserver proxies a request with its front-proxy client certificate and the user in
``X-Remote-User``, ``X-Remote-Group`` (one header per group) and ``X-Remote-Extra-<key>``.
The headers are believed only from a connection whose certificate verifies against the
request-header CA and, when allowed names are configured, whose CN is one of them; on any
other connection they are ignored. A verified proxy that names no user authenticates
nobody by this method. Extra keys are lower-cased, then percent-decoded (the proxy escapes
bytes not allowed in a header name, and ``%`` itself).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from ..machinery.user import UserInfo
from .credentials import Credentials
from .x509 import CABundle, CertificateError, CertificateVerifier, common_name

log = logging.getLogger("apiserver")

DEFAULT_USERNAME_HEADERS = ("X-Remote-User",)
DEFAULT_GROUP_HEADERS = ("X-Remote-Group",)
DEFAULT_EXTRA_PREFIXES = ("X-Remote-Extra-",)


@dataclass(frozen=True)
class RequestHeaderConfig:
    ca: CABundle
    allowed_names: tuple[str, ...] = ()
    """CNs the proxy's certificate may have; empty allows any the CA signed."""
    username_headers: tuple[str, ...] = DEFAULT_USERNAME_HEADERS
    uid_headers: tuple[str, ...] = ()
    group_headers: tuple[str, ...] = DEFAULT_GROUP_HEADERS
    extra_prefixes: tuple[str, ...] = DEFAULT_EXTRA_PREFIXES


RequestHeaderSource = Callable[[], RequestHeaderConfig | None]

_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def unescape_extra_key(key: str) -> str:
    """The percent-decoded key; a key with a malformed escape stays as it is (as in Go)."""
    if "%" not in key or _ESCAPE.search(key):
        return key
    return unquote(key, errors="replace")


def extra_from_headers(
    headers: Sequence[tuple[str, str]], prefixes: Sequence[str]
) -> dict[str, tuple[str, ...]]:
    """Extra values by key from every header that starts with one of ``prefixes``."""
    lowered = [p.lower() for p in prefixes]
    extra: dict[str, list[str]] = {}
    for name, value in headers:
        for prefix in lowered:
            if name.startswith(prefix) and len(name) > len(prefix):
                key = unescape_extra_key(name[len(prefix) :].lower())
                extra.setdefault(key, []).append(value)
                break
    return {k: tuple(v) for k, v in extra.items()}


def _first_value(credentials: Credentials, names: Sequence[str]) -> str:
    for name in names:
        for value in credentials.header_values(name.lower()):
            if value.strip():
                return value
    return ""


def _all_values(credentials: Credentials, names: Sequence[str]) -> tuple[str, ...]:
    return tuple(
        value
        for name in names
        for value in credentials.header_values(name.lower())
        if value.strip()
    )


def user_from_headers(credentials: Credentials, config: RequestHeaderConfig) -> UserInfo | None:
    """The user the headers name; None when no user header has a value."""
    name = _first_value(credentials, config.username_headers)
    if not name:
        return None
    return UserInfo(
        name,
        _first_value(credentials, config.uid_headers),
        _all_values(credentials, config.group_headers),
        extra_from_headers(credentials.headers, config.extra_prefixes),
    )


class RequestHeaderAuthenticator:
    def __init__(
        self, config: RequestHeaderSource, verifier: CertificateVerifier | None = None
    ) -> None:
        self.config = config
        self.verifier = verifier or CertificateVerifier()

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        chain = credentials.client_cert_chain
        config = self.config()
        if not chain or config is None:
            return None
        try:
            cert = self.verifier.verify(chain, config.ca)
        except CertificateError as exc:
            log.debug("front-proxy certificate not accepted: %s", exc)
            return None
        if config.allowed_names and common_name(cert) not in config.allowed_names:
            log.debug("front-proxy certificate CN %r is not an allowed name", common_name(cert))
            return None
        return user_from_headers(credentials, config)

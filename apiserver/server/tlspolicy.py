"""Which TLS versions and cipher suites the server offers: Kubernetes' secure defaults.

TLS 1.3 is left as it is (all its suites are AEAD). TLS 1.2 is limited to ECDHE key
exchange with AES-GCM or ChaCha20-Poly1305, the suites Go (and so kube-apiserver) prefers
and does not call insecure; the CBC suites that uvicorn's default OpenSSL list offers
(``TLSv1``, with SHA-1 and SHA-256 MACs) are not offered, and nothing older than TLS 1.2.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

TLS12_CIPHERS = ":".join(
    [
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "ECDHE-RSA-CHACHA20-POLY1305",
    ]
)
"""OpenSSL names of the TLS 1.2 suites offered (``set_ciphers`` does not touch TLS 1.3's)."""

ContextFactory = Callable[[Any, Callable[[], ssl.SSLContext]], ssl.SSLContext]


def apply_policy(context: ssl.SSLContext) -> ssl.SSLContext:
    """Limit a server context to TLS 1.2 with AEAD suites, and TLS 1.3."""
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)
    return context


def with_policy(factory: ContextFactory) -> ContextFactory:
    """A uvicorn ``ssl_context_factory`` that makes ``factory``'s context and applies the
    policy to it."""

    def make(config: Any, default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
        return apply_policy(factory(config, default))

    return make

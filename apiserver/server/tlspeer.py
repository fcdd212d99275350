"""The TLS client certificate, from the handshake into the ASGI scope, unverified.

Kubernetes asks every client for a certificate but does not verify it during the handshake
(Go's ``tls.RequestClientCert``): the authenticators verify it later, each against its own
CA, so a certificate nobody trusts ends in 401 and not in a broken connection. Two things
stand in the way in Python 3.11 with uvicorn:

- ``ssl`` has no "request but do not verify" mode. ``CERT_NONE`` never asks for a
  certificate; ``CERT_OPTIONAL`` asks and then fails the handshake on any certificate that
  does not verify against the context's CAs. ``request_client_certificates`` therefore sets
  ``CERT_OPTIONAL`` and installs, through ``ctypes``, an OpenSSL verify callback on the
  context's ``SSL_CTX`` that accepts whatever the client sent (OpenSSL's own documented way
  to continue a handshake after a failed verification; the handshake still proves that the
  client holds the certificate's private key, only the trust in its issuer is left to the
  application). It checks first that it found the right ``SSL_CTX`` (its verify mode must
  follow what Python sets); where it cannot (a Python without a shared libssl, another
  layout), it falls back to ``CERT_OPTIONAL`` with the union of the client CAs known at
  start and says so in the log: then an untrusted certificate fails the handshake, and CAs
  that change later are not trusted by it.
- uvicorn does not put the peer certificate into the scope. ``PeerCertificateMixin`` reads
  it once per connection (``SSLObject.getpeercert(binary_form=True)``, which returns the
  certificate also when it did not verify) and puts it under the ASGI TLS extension,
  ``scope["extensions"]["tls"]["client_cert_chain"]``, as PEM, into every request's scope.
  Python 3.11 has no ``get_unverified_chain``: only the client's own certificate arrives,
  so it must be signed directly by a CA of the bundle (intermediates belong in the bundle).

``with_peer_certificates(base)`` makes the protocol class from any uvicorn httptools
protocol class, so it composes with other hooks of the same kind (each a mixin whose
methods call ``super()``).
"""

from __future__ import annotations

import _ssl
import ctypes
import logging
import ssl
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("apiserver")

_VERIFY_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)


def _accept(preverify_ok: int, store_ctx: int | None) -> int:
    # Verification is the authenticators' job; the handshake only collects the certificate.
    return 1


_accept_any_certificate = _VERIFY_CALLBACK(_accept)  # kept alive as long as the module


def _libssl() -> ctypes.CDLL | None:
    """The libssl that Python's ``_ssl`` module is linked to (the very same library)."""
    try:
        lib = ctypes.CDLL(_ssl.__file__)
        lib.SSL_CTX_set_verify.argtypes = [ctypes.c_void_p, ctypes.c_int, _VERIFY_CALLBACK]
        lib.SSL_CTX_set_verify.restype = None
        lib.SSL_CTX_get_verify_mode.argtypes = [ctypes.c_void_p]
        lib.SSL_CTX_get_verify_mode.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return lib


_SSL_VERIFY_PEER = 0x01


def _ssl_ctx_pointer(context: ssl.SSLContext) -> int | None:
    # CPython's PySSLContext starts with PyObject_HEAD and then the SSL_CTX pointer.
    head = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)
    pointer = ctypes.c_void_p.from_address(id(context) + head).value
    return int(pointer) if pointer else None


def accept_unverified_certificates(context: ssl.SSLContext) -> bool:
    """Ask clients for a certificate and accept any; False when this Python does not allow it."""
    lib = _libssl()
    if lib is None:
        return False
    context.verify_mode = ssl.CERT_OPTIONAL
    pointer = _ssl_ctx_pointer(context)
    if pointer is None or lib.SSL_CTX_get_verify_mode(pointer) != _SSL_VERIFY_PEER:
        return False
    context.verify_mode = ssl.CERT_NONE
    if lib.SSL_CTX_get_verify_mode(pointer) != 0:
        return False
    # Both checks passed: ``pointer`` is this context's SSL_CTX.
    lib.SSL_CTX_set_verify(pointer, _SSL_VERIFY_PEER, _accept_any_certificate)
    # Python keeps the callback when the verify mode is set again; make it Python's too.
    context.verify_mode = ssl.CERT_OPTIONAL
    return bool(lib.SSL_CTX_get_verify_mode(pointer) == _SSL_VERIFY_PEER)


def request_client_certificates(
    context: ssl.SSLContext, fallback_cas: Iterable[str | Path] = ()
) -> bool:
    """Make a server context ask for client certificates and let any through to the app.

    Returns True when certificates are collected unverified (Kubernetes' behaviour); False
    when only certificates that verify against ``fallback_cas`` get through the handshake.
    """
    if accept_unverified_certificates(context):
        return True
    context.verify_mode = ssl.CERT_OPTIONAL
    for ca in fallback_cas:
        context.load_verify_locations(cafile=str(ca))
    log.warning(
        "this Python cannot ask for client certificates without verifying them; a client"
        " certificate no configured CA signed now fails the TLS handshake instead of a 401"
    )
    return False


def ssl_context_factory(
    fallback_cas: Iterable[str | Path] = (),
) -> Callable[[Any, Callable[[], ssl.SSLContext]], ssl.SSLContext]:
    """A uvicorn ``ssl_context_factory`` that asks for client certificates."""
    cas = list(fallback_cas)

    def factory(_config: Any, default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
        context = default()
        request_client_certificates(context, cas)
        return context

    return factory


def peer_certificate_pem(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> str | None:
    """The peer's certificate as PEM, verified or not; None without one."""
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    return x509.load_der_x509_certificate(der).public_bytes(Encoding.PEM).decode("ascii")


class PeerCertificateMixin:
    """Puts the connection's client certificate into each request's ASGI TLS extension."""

    transport: Any
    scope: Any
    _tls_extension: dict[str, Any] | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None:
            return
        pem = peer_certificate_pem(ssl_object)
        self._tls_extension = {
            "server_cert": None,
            "client_cert_chain": [pem] if pem else [],
            "client_cert_name": None,
            "client_cert_error": None,
            "tls_version": None,
            "cipher_suite": None,
        }

    def on_message_begin(self) -> None:
        super().on_message_begin()  # type: ignore[misc]
        if self._tls_extension is not None:
            self.scope["extensions"] = {"tls": self._tls_extension}


def with_peer_certificates(base: type[HttpToolsProtocol]) -> type[HttpToolsProtocol]:
    """``base`` (uvicorn's httptools protocol or a subclass) with the client certificate."""
    return type(f"PeerCertificate{base.__name__}", (PeerCertificateMixin, base), {})


PeerCertificateProtocol = with_peer_certificates(HttpToolsProtocol)

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
  Python 3.11 has no ``get_unverified_chain`` for the intermediates the client sent after
  its certificate: ``peer_intermediates`` reads them with OpenSSL's
  ``SSL_get_peer_cert_chain`` on the connection's ``SSL`` (found the same way, and used only
  when it belongs to the connection's own context). Without them (another Python, a resumed
  session) a client certificate must be signed directly by a CA of the bundle.

``with_peer_certificates(base)`` makes the protocol class from any uvicorn httptools
protocol class, so it composes with other hooks of the same kind (each a mixin whose
methods call ``super()``).
"""

from __future__ import annotations

import _ssl
import ctypes
import functools
import logging
import ssl
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .onewrite import OneWriteProtocol

log = logging.getLogger("apiserver")

_VERIFY_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)


def _accept(preverify_ok: int, store_ctx: int | None) -> int:
    # Verification is the authenticators' job; the handshake only collects the certificate.
    return 1


_accept_any_certificate = _VERIFY_CALLBACK(_accept)  # kept alive as long as the module


_BYTES = ctypes.POINTER(ctypes.c_ubyte)


@functools.cache
def _libssl() -> ctypes.CDLL | None:
    """The libssl (and its libcrypto) that Python's ``_ssl`` module is linked to."""
    try:
        lib = ctypes.CDLL(_ssl.__file__)
        lib.SSL_CTX_set_verify.argtypes = [ctypes.c_void_p, ctypes.c_int, _VERIFY_CALLBACK]
        lib.SSL_CTX_set_verify.restype = None
        lib.SSL_CTX_get_verify_mode.argtypes = [ctypes.c_void_p]
        lib.SSL_CTX_get_verify_mode.restype = ctypes.c_int
        lib.SSL_get_SSL_CTX.argtypes = [ctypes.c_void_p]
        lib.SSL_get_SSL_CTX.restype = ctypes.c_void_p
        lib.SSL_get_peer_cert_chain.argtypes = [ctypes.c_void_p]
        lib.SSL_get_peer_cert_chain.restype = ctypes.c_void_p
        lib.OPENSSL_sk_num.argtypes = [ctypes.c_void_p]
        lib.OPENSSL_sk_num.restype = ctypes.c_int
        lib.OPENSSL_sk_value.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.OPENSSL_sk_value.restype = ctypes.c_void_p
        lib.i2d_X509.argtypes = [ctypes.c_void_p, ctypes.POINTER(_BYTES)]
        lib.i2d_X509.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return lib


_SSL_VERIFY_PEER = 0x01


_HEAD = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)  # PyObject_HEAD


def _ssl_ctx_pointer(context: ssl.SSLContext) -> int | None:
    # CPython's PySSLContext: PyObject_HEAD, then the SSL_CTX pointer.
    pointer = ctypes.c_void_p.from_address(id(context) + _HEAD).value
    return int(pointer) if pointer else None


def _ssl_pointer(ssl_object: ssl.SSLObject) -> int | None:
    """The connection's ``SSL``, found only when it belongs to the object's own context."""
    lib = _libssl()
    inner = getattr(ssl_object, "_sslobj", None)
    if lib is None or inner is None:
        return None
    # CPython's PySSLSocket: PyObject_HEAD, the socket's weak reference, the SSL pointer.
    pointer = ctypes.c_void_p.from_address(id(inner) + _HEAD + ctypes.sizeof(ctypes.c_void_p))
    context = _ssl_ctx_pointer(ssl_object.context)
    if not pointer.value or context is None or lib.SSL_get_SSL_CTX(pointer.value) != context:
        return None
    return int(pointer.value)


def peer_intermediates(ssl_object: ssl.SSLObject) -> list[bytes]:
    """DER of the certificates the client sent after its own (its intermediates), when this
    Python lets them be read; [] otherwise, or on a resumed session (which keeps no chain)."""
    lib = _libssl()
    pointer = _ssl_pointer(ssl_object)
    if lib is None or pointer is None:
        return []
    stack = lib.SSL_get_peer_cert_chain(pointer)
    if not stack:
        return []
    chain = []
    for index in range(lib.OPENSSL_sk_num(stack)):
        cert = lib.OPENSSL_sk_value(stack, index)
        size = lib.i2d_X509(cert, None)
        if size <= 0:
            continue
        buffer = (ctypes.c_ubyte * size)()
        cursor = ctypes.cast(buffer, _BYTES)
        if lib.i2d_X509(cert, ctypes.byref(cursor)) == size:
            chain.append(bytes(buffer))
    return chain


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


def _pem(der: bytes) -> str:
    return x509.load_der_x509_certificate(der).public_bytes(Encoding.PEM).decode("ascii")


def peer_certificate_chain(ssl_object: ssl.SSLObject | None) -> list[str]:
    """The peer's certificate and the intermediates it sent, as PEM, verified or not."""
    if ssl_object is None:
        return []
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return []
    try:
        chain = [_pem(der)]
        for intermediate in peer_intermediates(ssl_object):
            if intermediate != der:
                chain.append(_pem(intermediate))
    except ValueError as exc:  # a certificate cryptography cannot read: no certificate
        log.info("ignored a client certificate that cannot be parsed: %s", exc)
        return []
    return chain


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
        self._tls_extension = {
            "server_cert": None,
            "client_cert_chain": peer_certificate_chain(ssl_object),
            "client_cert_name": None,
            "client_cert_error": None,
            "tls_version": None,
            "cipher_suite": None,
        }

    def on_message_begin(self) -> None:
        super().on_message_begin()  # type: ignore[misc]
        if self._tls_extension is not None:
            # beside any extension another hook of the protocol put there
            self.scope.setdefault("extensions", {})["tls"] = self._tls_extension


def with_peer_certificates(base: type[HttpToolsProtocol]) -> type[HttpToolsProtocol]:
    """``base`` (uvicorn's httptools protocol or a subclass) with the client certificate."""
    return type(f"PeerCertificate{base.__name__}", (PeerCertificateMixin, base), {})


PeerCertificateProtocol = with_peer_certificates(OneWriteProtocol)
"""The shim's: uvicorn's httptools protocol writing each response at once (``onewrite``),
with the client certificate."""

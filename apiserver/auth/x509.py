"""Client certificates: verified against a CA bundle, and the user of ``--client-ca-file``.

Verification follows Go's ``x509.Verify`` with ``ExtKeyUsage: ClientAuth`` as Kubernetes
uses it: the client's certificate must be within its validity dates and signed by a
certificate of the bundle, directly or through intermediates the client sent (every
certificate in the bundle is a trust anchor, as Go treats a CA file; a bundle certificate
with basic constraints must be a CA, an intermediate must be one; each must be within its
dates), and none of them may carry an extended key usage that excludes client
authentication. The verdict for a given chain and bundle is cached for a minute (and never
past a certificate's end), so requests on a kept-alive connection do not verify signatures
again.

``ClientCertAuthenticator``: a verified certificate's CN is the user name and its O values
are the groups, as kube-apiserver's x509 authenticator says; no CN means no user. Its CA
comes from a source that may change: a ``FileCA`` re-reads a changed file.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..machinery.user import UserInfo
from .cache import Clock, TTLCache
from .credentials import Credentials

log = logging.getLogger("apiserver")

VERDICT_TTL = 60.0


class CertificateError(Exception):
    """Why a client certificate does not verify."""


@dataclass(frozen=True)
class CABundle:
    """The trusted certificates of one CA file or ConfigMap key."""

    certificates: tuple[x509.Certificate, ...]
    fingerprint: bytes

    @classmethod
    def from_pem(cls, pem: bytes) -> CABundle:
        """The bundle of a PEM file's certificates; ValueError when it holds none."""
        certificates = tuple(x509.load_pem_x509_certificates(pem))
        return cls(certificates, hashlib.sha256(pem).digest())


CASource = Callable[[], CABundle | None]
"""The bundle in force now (it may change, as a ConfigMap does), or None when unset."""


def static_ca(bundle: CABundle) -> CASource:
    return lambda: bundle


class FileCA:
    """A CA file's bundle, re-read when the file changes (checked at most every ``interval``
    seconds), as Kubernetes reloads ``--client-ca-file``; a changed file that does not parse
    leaves the last good bundle in force."""

    def __init__(self, path: str | Path, interval: float = 10.0, clock: Clock = time.monotonic):
        self.path = Path(path)
        self.interval = interval
        self.clock = clock
        self._stamp = self._stat()
        self.bundle = CABundle.from_pem(self.path.read_bytes())
        self._checked = clock()

    def _stat(self) -> tuple[int, int]:
        stat = self.path.stat()
        return stat.st_mtime_ns, stat.st_size

    def __call__(self) -> CABundle | None:
        now = self.clock()
        if now - self._checked >= self.interval:
            self._checked = now
            self._reload()
        return self.bundle

    def _reload(self) -> None:
        try:
            stamp = self._stat()
            if stamp == self._stamp:
                return
            self._stamp = stamp
            self.bundle = CABundle.from_pem(self.path.read_bytes())
        except (OSError, ValueError) as exc:
            log.warning("CA file %s not reloaded, the last good one stays: %s", self.path, exc)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _check_dates(cert: x509.Certificate, now: datetime.datetime, what: str) -> None:
    if now < cert.not_valid_before_utc or now > cert.not_valid_after_utc:
        raise CertificateError(
            f"{what} has expired or is not yet valid: current time {now:%Y-%m-%dT%H:%M:%SZ}"
            f" is outside {cert.not_valid_before_utc:%Y-%m-%dT%H:%M:%SZ}"
            f"..{cert.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ}"
        )


def _check_client_usage(cert: x509.Certificate, what: str) -> None:
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return
    allowed = {ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE}
    if not allowed & set(usages):
        raise CertificateError(
            f"{what} is not valid for client authentication (extended key usage)"
        )


def _may_sign(ca: x509.Certificate, below: int, *, anchor: bool) -> bool:
    """Whether ``ca`` may sign with ``below`` intermediates under it (its path length)."""
    try:
        constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        return anchor  # a version 1 root, which Go trusts as well; never an intermediate
    return constraints.ca and (constraints.path_length is None or below <= constraints.path_length)


MAX_INTERMEDIATES = 4


def _issued_by(
    cert: x509.Certificate,
    issuer: x509.Certificate,
    below: int,
    now: datetime.datetime,
    reasons: list[str],
    *,
    anchor: bool,
) -> bool:
    if issuer.subject != cert.issuer:
        return False
    what = "issuer" if anchor else "intermediate"
    try:
        cert.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        reasons.append(f"{what} signature does not verify")
        return False
    if not _may_sign(issuer, below, anchor=anchor):
        reasons.append(f"{what} is not a CA (or its path length is exceeded)")
        return False
    try:
        _check_dates(issuer, now, what)
        _check_client_usage(issuer, what)
    except CertificateError as exc:
        reasons.append(str(exc))
        return False
    return True


def _anchor_of(
    cert: x509.Certificate,
    bundle: CABundle,
    intermediates: Sequence[x509.Certificate],
    below: int,
    now: datetime.datetime,
    reasons: list[str],
) -> x509.Certificate | None:
    """The anchor above ``cert``, which has ``below`` intermediates under it."""
    for ca in bundle.certificates:
        if ca == cert or _issued_by(cert, ca, below, now, reasons, anchor=True):
            return ca
    for index, intermediate in enumerate(intermediates):
        if _issued_by(cert, intermediate, below, now, reasons, anchor=False):
            rest = [*intermediates[:index], *intermediates[index + 1 :]]
            found = _anchor_of(intermediate, bundle, rest, below + 1, now, reasons)
            if found is not None:
                return found
    return None


def verify_client_certificate(
    cert: x509.Certificate,
    bundle: CABundle,
    now: datetime.datetime | None = None,
    intermediates: Sequence[x509.Certificate] = (),
) -> x509.Certificate:
    """The bundle certificate that vouches for ``cert``, directly or through
    ``intermediates`` (those the client sent); CertificateError if none does."""
    now = now or _now()
    _check_dates(cert, now, "certificate")
    _check_client_usage(cert, "certificate")
    reasons: list[str] = []
    found = _anchor_of(cert, bundle, list(intermediates[:MAX_INTERMEDIATES]), 0, now, reasons)
    if found is None:
        detail = f" ({'; '.join(dict.fromkeys(reasons))})" if reasons else ""
        raise CertificateError(f"certificate signed by unknown authority{detail}")
    return found


class CertificateVerifier:
    """Verifies PEM client certificates against a bundle, remembering recent verdicts."""

    def __init__(
        self, clock: Clock = time.monotonic, wall_clock: Callable[[], datetime.datetime] = _now
    ) -> None:
        self._verdicts: TTLCache[tuple[bytes, tuple[str, ...]], x509.Certificate | CertificateError]
        self._verdicts = TTLCache(clock=clock)
        self.wall_clock = wall_clock

    def verify(self, chain: Sequence[str], bundle: CABundle) -> x509.Certificate:
        """The client's certificate (``chain[0]``, intermediates after it, PEM) once it
        verifies; CertificateError otherwise."""
        key = (bundle.fingerprint, tuple(chain))
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict, ttl = self._judge(chain, bundle)
            self._verdicts.put(key, verdict, ttl)
        if isinstance(verdict, CertificateError):
            raise verdict
        return verdict

    def _judge(
        self, chain: Sequence[str], bundle: CABundle
    ) -> tuple[x509.Certificate | CertificateError, float]:
        try:
            cert, *intermediates = [x509.load_pem_x509_certificate(p.encode()) for p in chain]
        except ValueError:
            return CertificateError("not a certificate"), VERDICT_TTL
        now = self.wall_clock()
        try:
            verify_client_certificate(cert, bundle, now, intermediates)
        except CertificateError as exc:
            return exc, VERDICT_TTL
        ends = [c.not_valid_after_utc for c in (cert, *intermediates)]
        return cert, min(VERDICT_TTL, (min(ends) - now).total_seconds())


def _attributes(name: x509.Name, oid: x509.ObjectIdentifier) -> list[str]:
    return [str(a.value) for a in name.get_attributes_for_oid(oid)]


def common_name(cert: x509.Certificate) -> str:
    names = _attributes(cert.subject, NameOID.COMMON_NAME)
    return names[0] if names else ""


def user_of_certificate(cert: x509.Certificate) -> UserInfo | None:
    """CN as the user name, each O as a group; None without a CN."""
    name = common_name(cert)
    if not name:
        return None
    return UserInfo(name, groups=tuple(_attributes(cert.subject, NameOID.ORGANIZATION_NAME)))


class ClientCertAuthenticator:
    """The user named by a client certificate that the client CA signed."""

    def __init__(self, ca: CASource, verifier: CertificateVerifier | None = None) -> None:
        self.ca = ca
        self.verifier = verifier or CertificateVerifier()

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        chain = credentials.client_cert_chain
        bundle = self.ca()
        if not chain or bundle is None:
            return None
        try:
            cert = self.verifier.verify(chain, bundle)
        except CertificateError as exc:
            log.debug("client certificate not accepted: %s", exc)
            return None
        return user_of_certificate(cert)

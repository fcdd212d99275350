"""A local CA and a serving certificate for the server, generated when missing; client
certificates from a CA.

Keys are ECDSA P-256 (cheap TLS handshakes); the serving certificate names localhost,
the loopback addresses, this host and any extra names given (e.g. the in-cluster
Service ``<name>.<namespace>.svc``). Files are written with mode 0600 for keys.
A client certificate names its user in the CN and the user's groups in O, as Kubernetes'
``--client-ca-file`` authentication reads them (``issue_client_cert``,
``write_client_cert``).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..toolkit.options import option

CA_VALIDITY = datetime.timedelta(days=3650)
SERVING_VALIDITY = datetime.timedelta(days=365)
CLIENT_VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class ServingFiles:
    ca_cert: Path
    cert: Path
    key: Path


def _write(path: Path, data: bytes, private: bool = False) -> None:
    mode = 0o600 if private else 0o644
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    os.fchmod(fd, mode)  # the mode of open() only applies to a file it creates
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return _key_pem(key)


def _load_ca(
    cert_dir: Path, name: str = "ca"
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None:
    cert_path, key_path = cert_dir / f"{name}.crt", cert_dir / f"{name}.key"
    if cert_path.exists() and key_path.exists():
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        if isinstance(key, ec.EllipticCurvePrivateKey) and cert.not_valid_after_utc > _now():
            return cert, key
    return None


def ensure_ca(
    cert_dir: Path, name: str = "ca", common_name: str = "dra-apiserver-ca"
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """The CA ``<name>.crt``/``.key`` in ``cert_dir``, made when missing or expired (a new
    one means a new caBundle)."""
    existing = _load_ca(cert_dir, name)
    if existing is not None:
        return existing
    cert, key = make_ca(common_name)
    _write(cert_dir / f"{name}.key", _key_pem(key), private=True)
    _write(cert_dir / f"{name}.crt", cert_pem(cert))
    return cert, key


def make_ca(
    common_name: str,
    validity: datetime.timedelta = CA_VALIDITY,
    *,
    issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None = None,
    path_length: int | None = 0,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A new CA certificate and its key: self-signed, or an intermediate of ``issuer``.

    ``path_length``: how many intermediates may stand below it (0: it signs only leaves)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    issuer_name, signer = (issuer[0].subject, issuer[1]) if issuer else (name, key)
    usage = x509.KeyUsage(
        digital_signature=True,
        key_cert_sign=True,
        crl_sign=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        encipher_only=False,
        decipher_only=False,
    )
    cert = _signed(
        name,
        issuer_name,
        key,
        signer,
        not_before=_now() - datetime.timedelta(minutes=5),
        not_after=_now() + validity,
        extensions=[
            (x509.BasicConstraints(ca=True, path_length=path_length), True),
            (usage, True),
            (x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False),
        ],
    )
    return cert, key


def _signed(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    signer: ec.EllipticCurvePrivateKey,
    *,
    not_before: datetime.datetime,
    not_after: datetime.datetime,
    extensions: list[tuple[x509.ExtensionType, bool]],
) -> x509.Certificate:
    """A certificate of ``key`` for ``subject``, signed by ``signer`` (whose certificate
    names ``issuer``), with a random serial and ``extensions`` (each with whether it is
    critical), in that order."""
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
    )
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(signer, hashes.SHA256())


def _issue_leaf(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    subject: x509.Name,
    extensions: list[tuple[x509.ExtensionType, bool]],
    *,
    not_before: datetime.datetime,
    not_after: datetime.datetime,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A new key and its certificate signed by the CA: not a CA itself, naming the CA's key,
    after the ``extensions`` that say what it is for."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _signed(
        subject,
        ca_cert.subject,
        key,
        ca_key,
        not_before=not_before,
        not_after=not_after,
        extensions=[
            *extensions,
            (x509.BasicConstraints(ca=False, path_length=None), True),
            (x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False),
        ],
    )
    return cert, key


def issue_client_cert(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    user: str,
    groups: list[str] | tuple[str, ...] = (),
    *,
    not_before: datetime.datetime | None = None,
    not_after: datetime.datetime | None = None,
    usages: list[x509.ObjectIdentifier] | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A client certificate for ``user`` (CN) in ``groups`` (O), signed by the CA.

    ``usages`` are its extended key usages (client authentication unless told otherwise).
    """
    start = not_before or _now() - datetime.timedelta(minutes=5)
    subject = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    subject.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
    usage = x509.ExtendedKeyUsage(usages or [ExtendedKeyUsageOID.CLIENT_AUTH])
    return _issue_leaf(
        ca_cert,
        ca_key,
        x509.Name(subject),
        [(usage, False)],
        not_before=start,
        not_after=not_after or start + CLIENT_VALIDITY,
    )


@dataclass
class ClientCertOptions:
    """``client-cert``: a client certificate for a user, signed by the CA of ``--cert-dir``."""

    user: str = option("--user", help="the user name (the certificate's CN)")
    out: str = option("--out", help="write OUT.crt and OUT.key")
    cert_dir: str = option("--cert-dir", "certs", "where the CA (ca.crt, ca.key) lives")
    group: list[str] = option("--group", [], "a group of the user (O); repeatable", action="append")


def write_client_cert(
    cert_dir: str | Path, user: str, groups: list[str], out: str | Path
) -> tuple[Path, Path]:
    """Sign a client certificate with the CA of ``cert_dir``; write ``<out>.crt``/``.key``."""
    ca = _load_ca(Path(cert_dir))
    if ca is None:
        raise ValueError(f"no valid CA (ca.crt and ca.key) in {cert_dir}; start the server once")
    cert, key = issue_client_cert(*ca, user, groups)
    cert_path, key_path = Path(f"{out}.crt"), Path(f"{out}.key")
    if cert_path.parent != Path():
        cert_path.parent.mkdir(parents=True, exist_ok=True)
    _write(key_path, _key_pem(key), private=True)
    _write(cert_path, cert_pem(cert))
    return cert_path, key_path


def _wanted_names(
    extra: list[str],
) -> tuple[set[str], set[ipaddress.IPv4Address | ipaddress.IPv6Address]]:
    dns = {"localhost", socket.gethostname(), *(n for n in extra if not _is_ip(n))}
    ips = {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")}
    ips |= {ipaddress.ip_address(n) for n in extra if _is_ip(n)}
    return dns, ips


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _serving_ok(
    cert_path: Path,
    key_path: Path,
    ca: x509.Certificate,
    dns: set[str],
    ips: set[ipaddress.IPv4Address | ipaddress.IPv6Address],
) -> bool:
    if not (cert_path.exists() and key_path.exists()):
        return False
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    if cert.issuer != ca.subject or cert.not_valid_after_utc < _now() + datetime.timedelta(days=1):
        return False
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return dns <= set(san.get_values_for_type(x509.DNSName)) and ips <= set(
        san.get_values_for_type(x509.IPAddress)
    )


def issue_serving_cert(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common_name: str,
    dns: list[str],
    ips: set[ipaddress.IPv4Address | ipaddress.IPv6Address] | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A new serving certificate for ``dns`` (and ``ips``), signed by the CA, and its key."""
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns]
    names += [x509.IPAddress(i) for i in sorted(ips or set(), key=str)]
    return _issue_leaf(
        ca_cert,
        ca_key,
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]),
        [
            (x509.SubjectAlternativeName(names), False),
            (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False),
        ],
        not_before=_now() - datetime.timedelta(minutes=5),
        not_after=_now() + SERVING_VALIDITY,
    )


def ensure_serving_certs(
    cert_dir: str | Path, extra_names: list[str] | None = None
) -> ServingFiles:
    """The CA and serving certificate in ``cert_dir``, created or renewed as needed."""
    directory = Path(cert_dir)
    directory.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = ensure_ca(directory)
    cert_path, key_path = directory / "apiserver.crt", directory / "apiserver.key"
    dns, ips = _wanted_names(extra_names or [])
    if not _serving_ok(cert_path, key_path, ca_cert, dns, ips):
        cert, key = issue_serving_cert(ca_cert, ca_key, "dra-apiserver", sorted(dns), ips)
        _write(key_path, _key_pem(key), private=True)
        _write(cert_path, cert_pem(cert))
    return ServingFiles(directory / "ca.crt", cert_path, key_path)

"""auth/x509.py: client certificate verification as Go's x509.Verify with ClientAuth
(dates, issuer, CA constraints, extended key usage), the verdict cache, CN/O as the user."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from apiserver.auth import Credentials
from apiserver.auth.x509 import (
    CABundle,
    CertificateError,
    CertificateVerifier,
    ClientCertAuthenticator,
    FileCA,
    static_ca,
    verify_client_certificate,
)
from apiserver.server.certs import cert_pem, issue_client_cert, make_ca

NOW = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)

CA = make_ca("client-ca")
OTHER_CA = make_ca("client-ca")  # the same name, another key
BUNDLE = CABundle.from_pem(cert_pem(CA[0]))


def _client(
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] = CA,
    *,
    start: datetime.datetime = NOW - DAY,
    end: datetime.datetime = NOW + DAY,
    usages: list[x509.ObjectIdentifier] | None = None,
    user: str = "alice",
    groups: tuple[str, ...] = ("dev", "ops"),
) -> x509.Certificate:
    return issue_client_cert(*ca, user, groups, not_before=start, not_after=end, usages=usages)[0]


def _no_eku_cert() -> x509.Certificate:
    key = ec.generate_private_key(ec.SECP256R1())
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "legacy")]))
        .issuer_name(CA[0].subject)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(NOW - DAY)
        .not_valid_after(NOW + DAY)
        .sign(CA[1], hashes.SHA256())
    )


def test_valid_certificate_verifies() -> None:
    assert verify_client_certificate(_client(), BUNDLE, NOW) == CA[0]


def test_without_extended_key_usage_it_verifies() -> None:
    verify_client_certificate(_no_eku_cert(), BUNDLE, NOW)


def test_any_extended_key_usage_verifies() -> None:
    cert = _client(usages=[ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE])
    verify_client_certificate(cert, BUNDLE, NOW)


@pytest.mark.parametrize(
    ("cert", "message"),
    [
        (_client(end=NOW - datetime.timedelta(seconds=1)), "has expired or is not yet valid"),
        (_client(start=NOW + datetime.timedelta(seconds=1)), "has expired or is not yet valid"),
        (_client(OTHER_CA), "signed by unknown authority (signature does not verify)"),
        (_client(make_ca("another-name")), "signed by unknown authority"),
        (
            _client(usages=[ExtendedKeyUsageOID.SERVER_AUTH]),
            "not valid for client authentication",
        ),
    ],
    ids=["expired", "not-yet-valid", "wrong-ca-same-name", "wrong-ca", "server-auth-only"],
)
def test_refused(cert: x509.Certificate, message: str) -> None:
    with pytest.raises(CertificateError, match=message.replace("(", r"\(").replace(")", r"\)")):
        verify_client_certificate(cert, BUNDLE, NOW)


def test_expired_ca_refuses() -> None:
    ca = make_ca("short-lived", validity=datetime.timedelta(days=1))
    cert = _client(ca, start=NOW - DAY, end=NOW + 400 * DAY)
    later = NOW + 2 * DAY
    with pytest.raises(CertificateError, match="issuer has expired"):
        verify_client_certificate(cert, CABundle.from_pem(cert_pem(ca[0])), later)


def test_any_ca_of_the_bundle_may_vouch() -> None:
    bundle = CABundle.from_pem(cert_pem(OTHER_CA[0]) + cert_pem(CA[0]))
    assert verify_client_certificate(_client(), bundle, NOW) == CA[0]
    assert verify_client_certificate(_client(OTHER_CA), bundle, NOW) == OTHER_CA[0]


def test_bundle_without_certificates_is_an_error() -> None:
    with pytest.raises(ValueError, match="Unable to load PEM"):
        CABundle.from_pem(b"not a certificate")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_verifier_keeps_a_verdict_per_bundle() -> None:
    clock = Clock()
    wall = [NOW]
    verifier = CertificateVerifier(clock, lambda: wall[0])
    pem = cert_pem(_client(end=NOW + DAY)).decode()
    verifier.verify(pem, BUNDLE)
    # Past the certificate's end: the kept verdict would still say yes, within its TTL...
    wall[0] = NOW + 2 * DAY
    verifier.verify(pem, BUNDLE)
    # ...and not after it.
    clock.now += 60
    with pytest.raises(CertificateError, match="expired"):
        verifier.verify(pem, BUNDLE)
    # Another bundle (a rotated CA) is judged afresh, not from a kept verdict.
    wall[0] = NOW
    fresh = cert_pem(_client()).decode()
    verifier.verify(fresh, BUNDLE)
    with pytest.raises(CertificateError, match="unknown authority"):
        verifier.verify(fresh, CABundle.from_pem(cert_pem(OTHER_CA[0])))


def test_verdict_never_outlives_the_certificate() -> None:
    clock = Clock()
    wall = [NOW]
    verifier = CertificateVerifier(clock, lambda: wall[0])
    pem = cert_pem(_client(end=NOW + datetime.timedelta(seconds=5))).decode()
    verifier.verify(pem, BUNDLE)
    clock.now += 5
    wall[0] = NOW + datetime.timedelta(seconds=5, microseconds=1)
    with pytest.raises(CertificateError, match="expired"):
        verifier.verify(pem, BUNDLE)


def _credentials(*certs: x509.Certificate) -> Credentials:
    return Credentials((), tuple(cert_pem(c).decode() for c in certs))


async def test_authenticator_user_is_cn_groups_are_o() -> None:
    authenticator = ClientCertAuthenticator(static_ca(BUNDLE))
    cert = issue_client_cert(*CA, "alice", ("dev", "ops"))[0]
    user = await authenticator.authenticate(_credentials(cert))
    assert user is not None
    assert (user.name, user.groups) == ("alice", ("dev", "ops"))


async def test_authenticator_knows_nobody_without_a_good_certificate() -> None:
    authenticator = ClientCertAuthenticator(static_ca(BUNDLE))
    assert await authenticator.authenticate(_credentials()) is None
    stranger = issue_client_cert(*OTHER_CA, "alice")[0]
    assert await authenticator.authenticate(_credentials(stranger)) is None
    unset = ClientCertAuthenticator(lambda: None)
    assert await unset.authenticate(_credentials(issue_client_cert(*CA, "alice")[0])) is None


def test_file_ca_follows_the_file(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "ca.crt"
    path.write_bytes(cert_pem(CA[0]))
    source = FileCA(path, interval=10, clock=clock)
    first = source()
    assert first is not None
    assert first.certificates == (CA[0],)
    path.write_bytes(cert_pem(OTHER_CA[0]) + b"\n")
    clock.now += 9.9
    assert source() is first  # not checked again yet
    clock.now += 0.1
    rotated = source()
    assert rotated is not None
    assert rotated.certificates == (OTHER_CA[0],)
    path.write_bytes(b"garbage, longer than before to change the size")
    clock.now += 10
    assert source() is rotated  # a broken file leaves the last good bundle

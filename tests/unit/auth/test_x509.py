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
        (_client(OTHER_CA), "signed by unknown authority (issuer signature does not verify)"),
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
    verifier.verify([pem], BUNDLE)
    # Past the certificate's end: the kept verdict would still say yes, within its TTL...
    wall[0] = NOW + 2 * DAY
    verifier.verify([pem], BUNDLE)
    # ...and not after it.
    clock.now += 60
    with pytest.raises(CertificateError, match="expired"):
        verifier.verify([pem], BUNDLE)
    # Another bundle (a rotated CA) is judged afresh, not from a kept verdict.
    wall[0] = NOW
    fresh = cert_pem(_client()).decode()
    verifier.verify([fresh], BUNDLE)
    with pytest.raises(CertificateError, match="unknown authority"):
        verifier.verify([fresh], CABundle.from_pem(cert_pem(OTHER_CA[0])))


def test_verdict_never_outlives_the_certificate() -> None:
    clock = Clock()
    wall = [NOW]
    verifier = CertificateVerifier(clock, lambda: wall[0])
    pem = cert_pem(_client(end=NOW + datetime.timedelta(seconds=5))).decode()
    verifier.verify([pem], BUNDLE)
    clock.now += 5
    wall[0] = NOW + datetime.timedelta(seconds=5, microseconds=1)
    with pytest.raises(CertificateError, match="expired"):
        verifier.verify([pem], BUNDLE)


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


def _signer_without_constraints(
    parent: tuple[x509.Certificate, ec.EllipticCurvePrivateKey], name: str
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A certificate that signs others but has no basic constraints: not a CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(parent[0].subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - DAY)
        .not_valid_after(NOW + 30 * DAY)
    )
    return builder.sign(parent[1], hashes.SHA256()), key


def test_intermediates_the_client_sends_lead_to_the_bundle() -> None:
    root = make_ca("root", path_length=None)
    first = make_ca("intermediate-1", issuer=root, path_length=1)
    second = make_ca("intermediate-2", issuer=first)
    leaf = _client(second)
    bundle = CABundle.from_pem(cert_pem(root[0]))
    assert verify_client_certificate(leaf, bundle, NOW, [second[0], first[0]]) == root[0]
    # in any order the client sends them
    assert verify_client_certificate(leaf, bundle, NOW, [first[0], second[0]]) == root[0]
    with pytest.raises(CertificateError, match="unknown authority"):
        verify_client_certificate(leaf, bundle, NOW, [second[0]])
    # an intermediate in the bundle is an anchor itself
    assert verify_client_certificate(leaf, CABundle.from_pem(cert_pem(second[0])), NOW) == second[0]


def test_an_intermediate_must_be_a_ca() -> None:
    root = make_ca("root", path_length=None)
    not_ca = _signer_without_constraints(root, "not-a-ca")
    leaf = _client(not_ca)
    with pytest.raises(CertificateError, match="intermediate is not a CA"):
        verify_client_certificate(leaf, CABundle.from_pem(cert_pem(root[0])), NOW, [not_ca[0]])


def test_path_length_is_kept() -> None:
    root = make_ca("root")  # path length 0: it signs leaves only
    middle = make_ca("intermediate", issuer=root)
    leaf = _client(middle)
    with pytest.raises(CertificateError, match="path length is exceeded"):
        verify_client_certificate(leaf, CABundle.from_pem(cert_pem(root[0])), NOW, [middle[0]])
    deeper_root = make_ca("root-1", path_length=1)
    first = make_ca("first", issuer=deeper_root, path_length=None)
    second = make_ca("second", issuer=first)
    bundle = CABundle.from_pem(cert_pem(deeper_root[0]))
    with pytest.raises(CertificateError, match="path length is exceeded"):
        verify_client_certificate(_client(second), bundle, NOW, [second[0], first[0]])
    assert verify_client_certificate(_client(first), bundle, NOW, [first[0]]) == deeper_root[0]


def test_verifier_takes_the_chain_as_sent() -> None:
    root = make_ca("root", path_length=None)
    middle = make_ca("intermediate", issuer=root)
    leaf = _client(middle, user="carol")
    verifier = CertificateVerifier()
    bundle = CABundle.from_pem(cert_pem(root[0]))
    chain = [cert_pem(leaf).decode(), cert_pem(middle[0]).decode()]
    assert verifier.verify(chain, bundle) == leaf
    with pytest.raises(CertificateError):
        verifier.verify(chain[:1], bundle)

"""The connection settings: deadlines of the protocol class, and the TLS cipher policy."""

from __future__ import annotations

import ssl

import pytest

from apiserver.server.protocol import (
    READ_HEADER_TIMEOUT,
    READ_TIMEOUT,
    WRITE_STALL_TIMEOUT,
    BoundedHttpToolsProtocol,
)
from apiserver.server.tlspolicy import apply_policy


def test_the_defaults_are_kube_apiservers() -> None:
    assert READ_HEADER_TIMEOUT == 32.0
    protocol = BoundedHttpToolsProtocol.with_timeouts()
    assert protocol.read_header_timeout == READ_HEADER_TIMEOUT
    assert protocol.read_timeout == READ_TIMEOUT
    assert protocol.write_stall_timeout == WRITE_STALL_TIMEOUT


def test_with_timeouts_makes_a_class_of_its_own() -> None:
    protocol = BoundedHttpToolsProtocol.with_timeouts(1.5, 2.5, 3.5)
    assert issubclass(protocol, BoundedHttpToolsProtocol)
    assert (protocol.read_header_timeout, protocol.read_timeout) == (1.5, 2.5)
    assert protocol.write_stall_timeout == 3.5
    assert BoundedHttpToolsProtocol.read_header_timeout == READ_HEADER_TIMEOUT


@pytest.mark.parametrize("timeouts", [(0, 1, 1), (1, -1, 1), (1, 1, 0)])
def test_deadlines_must_be_positive(timeouts: tuple[float, float, float]) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        BoundedHttpToolsProtocol.with_timeouts(*timeouts)


def test_tls12_offers_only_ecdhe_with_aead() -> None:
    context = apply_policy(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    tls12 = [c for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"]
    assert tls12
    for cipher in tls12:
        assert cipher["aead"], cipher["name"]
        assert cipher["kea"] == "kx-ecdhe", cipher["name"]
    # TLS 1.3's suites are untouched.
    assert any(c["protocol"] == "TLSv1.3" for c in context.get_ciphers())

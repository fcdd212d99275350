"""What is particular to the etcd backend: URLs, the stored form, the key layout, outages,
several endpoints, TLS client certificates, and which etcd versions order progress."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest
from aetcd import rpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from apiserver.storage import StorageUnavailableError, StoredObject
from apiserver.storage.etcd import (
    EtcdConfig,
    EtcdStore,
    encode,
    progress_is_ordered,
    with_revision,
)
from devtools.localetcd import LocalEtcd, ServerTLS
from devtools.process import free_port
from devtools.waiting import eventually

from .conftest import etcd_store, unique_prefix

HANG = 30.0


# -- configuration ---------------------------------------------------------------------------


def test_url_with_several_endpoints_and_a_prefix() -> None:
    config = EtcdConfig.from_url("etcd://127.0.0.1:2379,10.0.0.2:2379", prefix="/k8s/")
    assert config.endpoints == ("127.0.0.1:2379", "10.0.0.2:2379")
    assert config.prefix == "/k8s"


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        ("etcd://", {}, "at least one endpoint"),
        ("etcd://localhost", {}, "HOST:PORT"),
        ("http://127.0.0.1:2379", {}, "not an etcd URL"),
        ("etcd://127.0.0.1:2379", {"prefix": "registry"}, "must start with '/'"),
        ("etcds://127.0.0.1:2379", {}, "--etcd-cafile"),
        ("etcd://127.0.0.1:2379", {"cert_file": "c.pem"}, "go together"),
    ],
)
def test_bad_urls_and_options_are_refused(url: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EtcdConfig.from_url(url, **options)


@pytest.mark.parametrize(
    ("version", "ordered"),
    [
        ("3.5.1", False),
        ("3.5.12", False),
        ("3.5.13", True),
        ("3.4.30", False),
        ("3.4.31", True),
        ("3.6.0", True),
        ("3.3.27", False),
        ("garbage", False),
    ],
)
def test_progress_notifications_are_trusted_only_where_etcd_orders_them(
    version: str, ordered: bool
) -> None:
    assert progress_is_ordered(version) is ordered


# -- the stored form ---------------------------------------------------------------------------


def test_stored_form_gets_the_revision_spliced_in() -> None:
    obj = {
        "spec": {"metadata": {"resourceVersion": "spec-owned"}, "x": 1},
        "kind": "K",
        "metadata": {"name": "a", "resourceVersion": "7", "labels": {"l": '"metadata":{'}},
        "apiVersion": "g/v1",
    }
    value = encode(obj)
    assert orjson.loads(value)["metadata"]["resourceVersion"] == ""
    read = orjson.loads(with_revision(value, 42))
    assert read == {**obj, "metadata": {**obj["metadata"], "resourceVersion": "42"}}
    assert read["spec"]["metadata"]["resourceVersion"] == "spec-owned"


def test_values_written_by_hand_still_read_with_their_revision() -> None:
    assert orjson.loads(with_revision(b'{"metadata":{"name":"x"},"n":1}', 9)) == {
        "metadata": {"name": "x", "resourceVersion": "9"},
        "n": 1,
    }
    assert orjson.loads(with_revision(b'{"n":1}', 9)) == {
        "n": 1,
        "metadata": {"resourceVersion": "9"},
    }


async def test_objects_live_under_the_prefix_without_a_revision(etcd: LocalEtcd) -> None:
    prefix = unique_prefix()
    store = etcd_store(etcd, prefix)
    await store.start()
    try:
        created = await store.create("/g/things/a", {"metadata": {"name": "a"}, "n": 1})
    finally:
        await store.close()
    async with grpc.aio.insecure_channel(etcd.endpoint) as channel:
        found = await rpc.KVStub(channel).Range(
            rpc.RangeRequest(
                key=f"{prefix}/g/things/".encode(), range_end=f"{prefix}/g/things0".encode()
            ),
            timeout=HANG,
        )
    assert [kv.key for kv in found.kvs] == [f"{prefix}/g/things/a".encode()]
    kv = found.kvs[0]
    assert kv.mod_revision == created.revision
    assert orjson.loads(kv.value) == {"metadata": {"resourceVersion": "", "name": "a"}, "n": 1}


# -- availability ------------------------------------------------------------------------------


async def test_unreachable_etcd_is_unavailable_not_a_hang(tmp_path: Path) -> None:
    store = EtcdStore(EtcdConfig.from_url(f"etcd://127.0.0.1:{free_port()}", request_timeout=2.0))
    await store.start()
    try:
        assert store.readiness() == {"etcd": False}
        for call in (
            store.get("/g/p/a"),
            store.list("/g/p/"),
            store.create("/g/p/a", {"metadata": {}}),
            store.current_revision(),
        ):
            with pytest.raises(StorageUnavailableError):
                await asyncio.wait_for(call, HANG)
        with pytest.raises(StorageUnavailableError):
            await asyncio.wait_for(anext(aiter(store.watch("/g/p/", 0))), HANG)
    finally:
        await store.close()


async def test_store_comes_back_when_etcd_restarts(tmp_path: Path) -> None:
    server = LocalEtcd(tmp_path / "etcd" / "data", fast=True).start()
    store = etcd_store(server, "/r")
    await store.start()
    try:
        before = await store.create("/g/p/a", {"metadata": {"name": "a"}})
        server.stop()
        with pytest.raises(StorageUnavailableError):
            await asyncio.wait_for(store.get("/g/p/a"), HANG)
        assert store.readiness() == {"etcd": False}
        server.start()

        async def back() -> StoredObject | None:
            with contextlib.suppress(StorageUnavailableError):
                return await store.get("/g/p/a")
            return None

        got = await eventually(back, "a read from the restarted etcd", timeout=HANG)
        assert got.revision == before.revision
        assert store.readiness() == {"etcd": True}
    finally:
        await store.close()
        server.stop()


async def test_a_dead_endpoint_fails_over_to_a_live_one(etcd: LocalEtcd) -> None:
    dead = f"127.0.0.1:{free_port()}"
    store = EtcdStore(
        EtcdConfig.from_url(
            f"etcd://{dead},{etcd.endpoint}", prefix=unique_prefix(), compaction_interval=0
        )
    )
    await store.start()
    try:
        created = await store.create("/g/p/a", {"metadata": {"name": "a"}})
        got = await store.get("/g/p/a")
        assert got is not None
        assert got.revision == created.revision
    finally:
        await store.close()


# -- TLS ---------------------------------------------------------------------------------------


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    usages: list[x509.ObjectIdentifier],
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_name, signer = issuer if issuer else (name, key)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return builder.sign(signer, hashes.SHA256())


def _write(directory: Path, name: str, cert: x509.Certificate, key: Any) -> tuple[Path, Path]:
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


async def test_tls_with_client_certificates(tmp_path: Path) -> None:
    pki = tmp_path / "pki"
    pki.mkdir()
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("test-ca", ca_key, None, [])
    ca_path, _ = _write(pki, "ca", ca, ca_key)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = _certificate(
        "etcd",
        server_key,
        (ca.subject, ca_key),
        [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
    )
    server_paths = _write(pki, "server", server_cert, server_key)
    client_key = ec.generate_private_key(ec.SECP256R1())
    client_cert = _certificate(
        "apiserver", client_key, (ca.subject, ca_key), [ExtendedKeyUsageOID.CLIENT_AUTH]
    )
    client_paths = _write(pki, "client", client_cert, client_key)

    tls = ServerTLS(cert=server_paths[0], key=server_paths[1], ca=ca_path)
    server = LocalEtcd(tmp_path / "etcd" / "data", fast=True, tls=tls).start()
    try:
        trusted = EtcdStore(
            EtcdConfig.from_url(
                server.url,
                ca_file=str(ca_path),
                cert_file=str(client_paths[0]),
                key_file=str(client_paths[1]),
                compaction_interval=0,
            )
        )
        await trusted.start()
        try:
            created = await trusted.create("/g/p/a", {"metadata": {"name": "a"}})
            got = await trusted.get("/g/p/a")
            assert got is not None
            assert got.revision == created.revision
        finally:
            await trusted.close()

        # Without a client certificate etcd refuses the connection.
        anonymous = EtcdStore(
            EtcdConfig.from_url(
                server.url, ca_file=str(ca_path), compaction_interval=0, request_timeout=3.0
            )
        )
        await anonymous.start()
        try:
            with pytest.raises(StorageUnavailableError):
                await asyncio.wait_for(anonymous.get("/g/p/a"), HANG)
        finally:
            await anonymous.close()
    finally:
        server.stop()

"""Serving certificate for the in-cluster install, and the kustomization that installs it.

Makes (or reuses) a CA and a serving certificate for the Service's DNS names, then writes
beside them, in ``--out`` (default: this directory, whose contents git ignores):

- ``secret.yaml``: the ``kubernetes.io/tls`` Secret the Deployment mounts;
- ``kustomization.yaml``: the chosen manifests (``--base``), that Secret, and the
  APIServices' ``caBundle`` set to the CA, so ``kubectl apply -k <out>`` installs it all.

It prints the caBundle (base64 PEM). Keys never leave ``--out``; never commit them.

    python certs/make_certs.py                              # one replica, resource.k8s.io
    python certs/make_certs.py --base manifests/overlays/ha --group resource.x-k8s.io
"""

from __future__ import annotations

import argparse
import base64
import datetime
import os
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

REPO = Path(__file__).resolve().parents[1]
DEFAULT_GROUP = "resource.k8s.io"
OTHER_GROUP_COMPONENT = REPO / "manifests" / "components" / "other-group"
VERSIONS = ("v1alpha3", "v1alpha1")
CA_DAYS = 3650
SERVING_DAYS = 365


def service_names(service: str, namespace: str, cluster_domain: str) -> list[str]:
    """The names the kube-apiserver (``<service>.<namespace>.svc``) and clients use."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.{cluster_domain}",
    ]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _write(path: Path, data: bytes, private: bool = False) -> None:
    mode = 0o600 if private else 0o644
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    os.fchmod(fd, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def ensure_ca(out: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """The CA in ``out``, made when missing or expired (a new one means a new caBundle)."""
    cert_path, key_path = out / "ca.crt", out / "ca.key"
    if cert_path.exists() and key_path.exists():
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        if isinstance(key, ec.EllipticCurvePrivateKey) and cert.not_valid_after_utc > _now():
            return cert, key
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dra-apiserver-ca")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - datetime.timedelta(minutes=5))
        .not_valid_after(_now() + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    _write(key_path, _pem_key(key), private=True)
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM))
    return cert, key


def serving_certificate(
    ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, names: list[str]
) -> tuple[bytes, bytes]:
    """A new serving certificate (PEM) for ``names``, and its key (PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[2])]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - datetime.timedelta(minutes=5))
        .not_valid_after(_now() + datetime.timedelta(days=SERVING_DAYS))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def secret(name: str, namespace: str, cert: bytes, key: bytes, ca: bytes) -> dict[str, object]:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": b64(cert), "tls.key": b64(key), "ca.crt": b64(ca)},
    }


def kustomization(out: Path, base: Path, group: str, ca_bundle: str) -> dict[str, object]:
    """The base, the Secret, the other-group component when ``group`` is not the default,
    and the caBundle of each APIService."""
    doc: dict[str, object] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(base.resolve(), out.resolve()), "secret.yaml"],
        "patches": [
            {
                "target": {"kind": "APIService", "name": f"{version}.{group}"},
                "patch": yaml.safe_dump(
                    [{"op": "add", "path": "/spec/caBundle", "value": ca_bundle}]
                ),
            }
            for version in VERSIONS
        ],
    }
    if group != DEFAULT_GROUP:
        if group != "resource.x-k8s.io":
            raise SystemExit(
                f"--group: the manifests have a component for resource.x-k8s.io only, not {group}"
            )
        doc["components"] = [os.path.relpath(OTHER_GROUP_COMPONENT, out.resolve())]
    return doc


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument(
        "--base",
        type=Path,
        default=REPO / "manifests" / "base",
        help="the manifests to install: manifests/base or manifests/overlays/ha",
    )
    parser.add_argument(
        "--group", default=DEFAULT_GROUP, help=f"{DEFAULT_GROUP} (default) or resource.x-k8s.io"
    )
    parser.add_argument("--namespace", default="dra-system")
    parser.add_argument("--service", default="dra-apiserver")
    parser.add_argument("--secret", default="dra-apiserver-tls")
    parser.add_argument("--cluster-domain", default="cluster.local")
    args = parser.parse_args(argv)  # fmt: skip

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    ca, ca_key = ensure_ca(out)
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    cert, key = serving_certificate(
        ca, ca_key, service_names(args.service, args.namespace, args.cluster_domain)
    )
    _write(out / "tls.crt", cert)
    _write(out / "tls.key", key, private=True)
    manifest = secret(args.secret, args.namespace, cert, key, ca_pem)
    _write(out / "secret.yaml", yaml.safe_dump(manifest).encode(), private=True)
    ca_bundle = base64.b64encode(ca_pem).decode()
    kustomize = kustomization(out, args.base, args.group, ca_bundle)
    _write(out / "kustomization.yaml", yaml.safe_dump(kustomize, sort_keys=False).encode())
    print(ca_bundle)


if __name__ == "__main__":
    main()

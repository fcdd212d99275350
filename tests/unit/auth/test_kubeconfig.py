"""kubeclient/config.py (as delegated auth reads a kubeconfig), server/tlspeer.py and the
auth options of serve: a kubeconfig's current context as an HTTPS client, the server context
that asks for client certificates without verifying them, what aggregated mode needs to
start, and the client certificates the client-cert command writes."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from apiserver.auth.delegation import AuthOptions, request_header_of_flags
from apiserver.kubeclient import KubeClient, KubeconfigError, load_kubeconfig
from apiserver.kubeclient.transport import ssl_context
from apiserver.server import tlspeer
from apiserver.server.certs import (
    cert_pem,
    ensure_serving_certs,
    issue_client_cert,
    key_pem,
    make_ca,
    write_client_cert,
)
from apiserver.server.modes import ClusterOptions
from apiserver.server.serve import ServeOptions, prepare
from apiserver.server.serving import ServingOptions
from apiserver.server.tlspeer import request_client_certificates
from apiserver.storage.options import StorageOptions


def _write(path: Path, user: dict[str, Any], cluster: dict[str, Any]) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://kube:6443", **cluster}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def test_token_and_ca_file_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    files = ensure_serving_certs(tmp_path / "certs")
    path = _write(tmp_path / "kc", {"token": "sa-token"}, {"certificate-authority": "certs/ca.crt"})
    target = load_kubeconfig(path)
    assert target.server == "https://kube:6443"
    assert ssl_context(target).verify_mode == ssl.CERT_REQUIRED
    [trusted] = ssl_context(target).get_ca_certs(binary_form=True)
    assert ssl.DER_cert_to_PEM_cert(trusted).strip() == files.ca_cert.read_text().strip()
    assert _authorization(KubeClient(target).http) == "Bearer sa-token"


def _authorization(client: httpx.AsyncClient) -> str:
    """The Authorization header the client's auth flow puts on a request."""
    flow = client._auth.auth_flow(client.build_request("GET", "/api"))  # type: ignore[attr-defined]
    return str(next(flow).headers["Authorization"])


def test_token_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file\n")
    target = load_kubeconfig(_write(tmp_path / "kc", {"tokenFile": "token"}, {}))
    assert target.token_file == tmp_path / "token"
    assert _authorization(KubeClient(target).http) == "Bearer from-file"


def test_client_certificate_data(tmp_path: Path) -> None:
    cert, key = issue_client_cert(*make_ca("ca"), "extension-server")
    user = {
        "client-certificate-data": base64.b64encode(cert_pem(cert)).decode(),
        "client-key-data": base64.b64encode(key_pem(key)).decode(),
    }
    target = load_kubeconfig(_write(tmp_path / "kc", user, {"insecure-skip-tls-verify": True}))
    assert target.token is None
    assert ssl_context(target).verify_mode == ssl.CERT_NONE


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("- not a mapping", "is not a mapping"),
        ("apiVersion: v1\n", "has no current-context"),
        ("current-context: x\ncontexts: []\n", "no context named 'x'"),
    ],
)
def test_bad_kubeconfig(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "kc").write_text(content)
    with pytest.raises(KubeconfigError, match=message):
        load_kubeconfig(tmp_path / "kc")


def test_exec_plugin_is_refused(tmp_path: Path) -> None:
    user = {"exec": {"command": "get-token", "apiVersion": "client.authentication.k8s.io/v1"}}
    with pytest.raises(KubeconfigError, match="uses exec; only a token"):
        load_kubeconfig(_write(tmp_path / "kc", user, {}))


def test_certificate_without_key_is_refused(tmp_path: Path) -> None:
    cert, _ = issue_client_cert(*make_ca("ca"), "x")
    user = {"client-certificate-data": base64.b64encode(cert_pem(cert)).decode()}
    with pytest.raises(KubeconfigError, match="without a key"):
        load_kubeconfig(_write(tmp_path / "kc", user, {}))


def test_server_context_asks_for_certificates_without_verifying() -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    assert request_client_certificates(context)
    assert context.verify_mode == ssl.CERT_OPTIONAL
    assert context.get_ca_certs() == []  # no CA: nothing is verified in the handshake


def test_aggregated_mode_outside_a_cluster_needs_kubeconfigs(tmp_path: Path) -> None:
    options = ServeOptions(
        storage=StorageOptions(storage=f"sqlite:///{tmp_path / 'store.db'}"),
        serving=ServingOptions(cert_dir=str(tmp_path / "certs")),
        cluster=ClusterOptions(mode="aggregated"),
        auth=AuthOptions(),
    )
    # The first check to refuse: no kube-apiserver to read from (its message names the flag).
    with pytest.raises(ValueError, match="pass --kubeconfig, or run in a Pod"):
        prepare(options)


def test_without_the_hook_only_known_cas_get_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Where the verify callback cannot be installed, CERT_OPTIONAL with the CA files."""
    monkeypatch.setattr(tlspeer, "_libssl", lambda: None)
    ca = tmp_path / "ca.crt"
    ca.write_bytes(cert_pem(make_ca("fallback-ca")[0]))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    assert not request_client_certificates(context, [ca])
    assert context.verify_mode == ssl.CERT_OPTIONAL
    [trusted] = context.get_ca_certs()
    assert trusted["subject"] == ((("commonName", "fallback-ca"),),)
    assert "fails the TLS handshake instead of a 401" in caplog.text


def test_front_proxy_ca_file_is_reloaded(tmp_path: Path) -> None:
    first, second = make_ca("proxy-ca-1"), make_ca("proxy-ca-2")
    ca_file = tmp_path / "proxy-ca.crt"
    ca_file.write_bytes(cert_pem(first[0]))
    now = [0.0]
    options = AuthOptions(
        requestheader_client_ca_file=str(ca_file), requestheader_allowed_names=["proxy"]
    )
    source = request_header_of_flags(options, clock=lambda: now[0])
    assert source is not None
    before = source()
    assert before is not None
    assert before.ca.certificates == (first[0],)
    ca_file.write_bytes(cert_pem(second[0]) + b"\n")
    now[0] += 10  # the file is looked at every 10 s
    after = source()
    assert after is not None
    assert after.ca.certificates == (second[0],)
    assert after.allowed_names == ("proxy",)


def test_client_cert_needs_the_ca_of_the_cert_dir(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no valid CA"):
        write_client_cert(tmp_path / "empty", "alice", [], tmp_path / "alice")
    ensure_serving_certs(tmp_path / "certs")
    cert, key = write_client_cert(tmp_path / "certs", "alice", ["dev"], tmp_path / "out" / "alice")
    assert (cert.name, key.name) == ("alice.crt", "alice.key")
    assert key.stat().st_mode & 0o777 == 0o600

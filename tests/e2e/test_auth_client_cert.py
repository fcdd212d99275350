"""Standalone mode with ``--client-ca-file``: a client certificate's CN and O are the user.

The certificate is made by the project's own command (``python -m apiserver client-cert``)
with the CA the server generated, as the README tells a user to do for kubectl. Which user
the server saw is read from the per-user creation limit of ResourcePoolStatusRequests,
whose 429 names the user.
"""

from __future__ import annotations

import base64
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from apiserver.server.certs import (
    cert_pem,
    ensure_serving_certs,
    issue_client_cert,
    key_pem,
    make_ca,
)

from .harness import REPO, ServerProcess, kubectl_binary, start_server

RPSRS = "/apis/resource.k8s.io/v1alpha1/resourcepoolstatusrequests"


def _mint(cert_dir: Path, user: str, groups: list[str], out: Path) -> tuple[Path, Path]:
    args = ["--cert-dir", str(cert_dir), "--user", user, "--out", str(out)]
    for group in groups:
        args += ["--group", group]
    result = subprocess.run(
        [sys.executable, "-m", "apiserver", "client-cert", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"wrote {out}.crt and {out}.key" in result.stdout
    return Path(f"{out}.crt"), Path(f"{out}.key")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("clientcert")
    # The server's CA exists before it starts, so it can also be its client CA.
    ensure_serving_certs(workdir / "certs")
    proc = start_server(
        workdir,
        [
            "--client-ca-file",
            str(workdir / "certs" / "ca.crt"),
            # Authentication is under test: who the certificate says (seen in the rate
            # limit's message), whatever RBAC would let that user do.
            "--authorization-mode",
            "AlwaysAllow",
            "--pool-status",
            "--pool-status-create-rate",
            "0.001",
            "--pool-status-create-burst",
            "1",
        ],
    )
    yield proc
    proc.stop()


def _client(server: ServerProcess, cert: Path, key: Path) -> httpx.Client:
    context = ssl.create_default_context(cafile=str(server.ca))
    context.load_cert_chain(str(cert), str(key))
    return httpx.Client(base_url=server.url, verify=context, timeout=30)


def _request(name: str) -> dict[str, object]:
    return {
        "apiVersion": "resource.k8s.io/v1alpha1",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": {"driver": "example.com/gpu"},
    }


def test_client_certificate_user_is_the_cn(server: ServerProcess) -> None:
    cert, key = _mint(server.cert_dir, "alice", ["dra-admins"], server.workdir / "alice")
    with _client(server, cert, key) as alice:
        assert alice.post(RPSRS, json=_request("alice-1")).status_code == 201
        refused = alice.post(RPSRS, json=_request("alice-2"))
    assert refused.status_code == 429
    assert "created by alice:" in refused.json()["message"]


def test_certificate_of_an_unknown_ca_is_401(server: ServerProcess, tmp_path: Path) -> None:
    ca = make_ca("someone-elses-ca")
    cert, key = issue_client_cert(*ca, "alice", ["system:masters"])
    (tmp_path / "c.crt").write_bytes(cert_pem(cert))
    (tmp_path / "c.key").write_bytes(key_pem(key))
    with _client(server, tmp_path / "c.crt", tmp_path / "c.key") as stranger:
        response = stranger.get("/apis/resource.k8s.io/v1/resourceslices")
    assert response.status_code == 401
    assert response.json()["reason"] == "Unauthorized"


def test_kubectl_with_a_client_certificate(server: ServerProcess) -> None:
    """kubectl (Go's TLS client) sends its certificate although the server names no CA
    in its certificate request."""
    cert, key = _mint(server.cert_dir, "bob", ["dra-admins"], server.workdir / "bob")
    config = yaml.safe_load(server.kubeconfig.read_text())
    config["users"] = [
        {
            "name": "bob",
            "user": {
                "client-certificate-data": base64.b64encode(cert.read_bytes()).decode(),
                "client-key-data": base64.b64encode(key.read_bytes()).decode(),
            },
        }
    ]
    config["contexts"][0]["context"]["user"] = "bob"
    kubeconfig = server.workdir / "bob.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(server.workdir)}
    manifest = yaml.safe_dump(_request("bob-1"))
    created = subprocess.run(
        [kubectl_binary(), "create", "-f", "-"],
        input=manifest,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    # The create was bob's: his next one is over his limit (kubectl itself would wait it out).
    with _client(server, cert, key) as bob:
        refused = bob.post(RPSRS, json=_request("bob-2"))
    assert refused.status_code == 429
    assert "created by bob:" in refused.json()["message"]

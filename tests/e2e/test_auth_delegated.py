"""Aggregated mode's authentication and authorization, over real TLS with the real server.

The server runs as a separate process in ``--mode aggregated``; the kube-apiserver it
delegates to (TokenReview, SubjectAccessReview, the extension-apiserver-authentication
ConfigMap) is the loopback double of ``kubeapi_double`` — no kube-apiserver can be installed
here, and this server does not serve the review APIs yet. What the server decided about a
caller is read from the SubjectAccessReview it sent (user, groups, extra, attributes), and
from the 401 and 403 ``Status`` answers. Certificates come from the project's own code.
"""

from __future__ import annotations

import os
import ssl
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from apiserver.server.certs import cert_pem, issue_client_cert, key_pem, make_ca

from .harness import ServerProcess, kubectl_binary, start_server
from .kubeapi_double import KubeAPIDouble

OURS = "resource.x-k8s.io"
SLICES = f"/apis/{OURS}/v1alpha3/resourceslicepatches"  # a kind the aggregated server serves


@dataclass
class Identity:
    cert: Path
    key: Path


class PKI:
    """CAs and client certificates written to files, as an operator would have them."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.cas: dict[str, tuple[x509.Certificate, ec.EllipticCurvePrivateKey]] = {}

    def ca(self, name: str, issuer: str | None = None) -> Path:
        """A CA (a root that may have intermediates, or an intermediate of ``issuer``)."""
        if name not in self.cas:
            parent = self.cas[issuer] if issuer else None
            self.cas[name] = make_ca(name, issuer=parent, path_length=None if not issuer else 0)
            (self.directory / f"{name}.crt").write_bytes(cert_pem(self.cas[name][0]))
        return self.directory / f"{name}.crt"

    def bundle(self, name: str, *cas: str) -> Path:
        """One CA file holding several CAs."""
        path = self.directory / f"{name}.crt"
        path.write_text("".join(self.ca_pem(ca) for ca in cas))
        return path

    def ca_pem(self, name: str) -> str:
        return self.ca(name).read_text()

    def identity(
        self, ca: str, user: str, groups: tuple[str, ...] = (), *, send: tuple[str, ...] = ()
    ) -> Identity:
        """A client certificate of ``ca``; the client also sends the CAs named in ``send``."""
        self.ca(ca)
        cert, key = issue_client_cert(*self.cas[ca], user, groups)
        stem = self.directory / f"{ca}-{user}{'-chain' if send else ''}"
        chain = cert_pem(cert) + b"".join(cert_pem(self.cas[c][0]) for c in send)
        stem.with_suffix(".crt").write_bytes(chain)
        stem.with_suffix(".key").write_bytes(key_pem(key))
        return Identity(stem.with_suffix(".crt"), stem.with_suffix(".key"))


def call(
    server: ServerProcess,
    path: str,
    identity: Identity | None = None,
    headers: dict[str, str] | list[tuple[str, str]] | None = None,
) -> httpx.Response:
    context = ssl.create_default_context(cafile=str(server.ca))
    if identity is not None:
        context.load_cert_chain(str(identity.cert), str(identity.key))
    with httpx.Client(base_url=server.url, verify=context, timeout=30) as client:
        return client.get(path, headers=headers)


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


FRONT_PROXY_HEADERS = [
    ("X-Remote-User", "bob"),
    ("X-Remote-Group", "developers"),
    ("X-Remote-Group", "gpu-users"),
    ("X-Remote-Extra-Scopes", "view"),
    ("X-Remote-Extra-Scopes", "edit"),
    ("X-Remote-Extra-Example.com%2fTeam", "dra"),
]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return PKI(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeAPIDouble]:
    def allow(spec: dict[str, Any]) -> bool:
        # Everyone may read discovery (as Kubernetes' system:discovery role grants); mallory
        # may do nothing else.
        return spec["user"] != "mallory" or "nonResourceAttributes" in spec

    double = KubeAPIDouble(
        tmp_path_factory.mktemp("kube"),
        users={
            "carol-token": {"username": "carol", "uid": "c-1", "groups": ["ops"]},
            "mallory-token": {"username": "mallory", "uid": "m-1", "groups": []},
        },
        allow=allow,
    ).start()
    yield double
    double.stop()


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Where aggregated mode reads slices, claims, classes and nodes: a standalone process of
    this server (the double answers only the authentication and authorization calls)."""
    proc = start_server(tmp_path_factory.mktemp("upstream"), [])
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def aggregated(
    tmp_path_factory: pytest.TempPathFactory,
    pki: PKI,
    kube: KubeAPIDouble,
    upstream: ServerProcess,
) -> Iterator[ServerProcess]:
    """Every CA by flag; tokens and authorization by the double; answers cached long."""
    workdir = tmp_path_factory.mktemp("aggregated")
    kubeconfig = kube.write_kubeconfig(workdir / "kube.kubeconfig")
    proc = start_server(
        workdir,
        [
            "--mode",
            "aggregated",
            "--kubeconfig",
            str(upstream.kubeconfig),
            "--group",  # the upstream serves resource.k8s.io itself
            "resource.x-k8s.io",
            "--requestheader-client-ca-file",
            str(pki.ca("front-proxy-ca")),
            "--requestheader-allowed-names",
            "front-proxy-client",
            "--client-ca-file",
            str(pki.bundle("client-cas", "client-ca", "client-root")),
            "--authentication-kubeconfig",
            str(kubeconfig),
            "--authorization-kubeconfig",
            str(kubeconfig),
            "--authentication-token-webhook-cache-ttl",
            "300",
            "--authorization-webhook-cache-authorized-ttl",
            "300",
        ],
    )
    yield proc
    proc.stop()


def _last_review_of(kube: KubeAPIDouble, user: str) -> dict[str, Any]:
    return next(r["spec"] for r in reversed(kube.access_reviews) if r["spec"]["user"] == user)


def test_front_proxy_names_the_user_groups_and_extra(
    aggregated: ServerProcess, pki: PKI, kube: KubeAPIDouble
) -> None:
    proxy = pki.identity("front-proxy-ca", "front-proxy-client")
    response = call(aggregated, SLICES, proxy, FRONT_PROXY_HEADERS)
    assert response.status_code == 200, response.text
    spec = _last_review_of(kube, "bob")
    assert spec["groups"] == ["developers", "gpu-users", "system:authenticated"]
    assert spec["extra"] == {"scopes": ["view", "edit"], "example.com/team": ["dra"]}
    assert spec["resourceAttributes"] == {
        "verb": "list",
        "group": OURS,
        "version": "v1alpha3",
        "resource": "resourceslicepatches",
    }


@pytest.mark.parametrize(
    "who", ["no certificate", "untrusted certificate", "certificate CN not allowed"]
)
def test_front_proxy_headers_without_the_proxy_certificate_are_ignored(
    aggregated: ServerProcess, pki: PKI, kube: KubeAPIDouble, who: str
) -> None:
    identity = {
        "no certificate": None,
        # signed by a CA nobody configured, with the proxy's very name
        "untrusted certificate": pki.identity("stranger-ca", "front-proxy-client"),
        # the front-proxy CA signed it, but its CN is not an allowed name
        "certificate CN not allowed": pki.identity("front-proxy-ca", "someone-else"),
    }[who]
    reviews = len(kube.access_reviews)
    response = call(aggregated, SLICES, identity, FRONT_PROXY_HEADERS)
    assert response.status_code == 401, response.text
    assert response.json()["reason"] == "Unauthorized"
    assert len(kube.access_reviews) == reviews


def test_client_certificate_names_the_user_and_groups(
    aggregated: ServerProcess, pki: PKI, kube: KubeAPIDouble
) -> None:
    alice = pki.identity("client-ca", "alice", ("dra-admins", "gpu-users"))
    response = call(aggregated, SLICES, alice)
    assert response.status_code == 200, response.text
    spec = _last_review_of(kube, "alice")
    assert spec["groups"] == ["dra-admins", "gpu-users", "system:authenticated"]


def test_client_certificate_through_the_intermediate_it_sends(
    aggregated: ServerProcess, pki: PKI, kube: KubeAPIDouble
) -> None:
    """The CA file holds the root only; the client sends its intermediate after its own."""
    pki.ca("client-intermediate", issuer="client-root")
    erin = pki.identity(
        "client-intermediate", "erin", ("dra-admins",), send=("client-intermediate",)
    )
    response = call(aggregated, SLICES, erin)
    assert response.status_code == 200, response.text
    assert _last_review_of(kube, "erin")["groups"] == ["dra-admins", "system:authenticated"]
    alone = pki.identity("client-intermediate", "frank")
    assert call(aggregated, SLICES, alone).status_code == 401


def test_client_certificate_of_another_ca_is_401_not_a_failed_handshake(
    aggregated: ServerProcess, pki: PKI
) -> None:
    stranger = pki.identity("stranger-ca", "alice", ("system:masters",))
    response = call(aggregated, SLICES, stranger)
    assert response.status_code == 401


def test_bearer_token_by_token_review_cached(
    aggregated: ServerProcess, kube: KubeAPIDouble
) -> None:
    headers = {"Authorization": "Bearer carol-token"}
    assert call(aggregated, SLICES, headers=headers).status_code == 200
    assert call(aggregated, f"{SLICES}?limit=1", headers=headers).status_code == 200
    reviews = [r for r in kube.token_reviews if r["spec"]["token"] == "carol-token"]
    assert len(reviews) == 1  # the second request was answered from the cache
    assert reviews[0]["apiVersion"] == "authentication.k8s.io/v1"
    spec = _last_review_of(kube, "carol")
    assert spec["uid"] == "c-1"
    assert spec["groups"] == ["ops", "system:authenticated"]


def test_unknown_bearer_token_is_401(aggregated: ServerProcess) -> None:
    response = call(aggregated, SLICES, headers={"Authorization": "Bearer no-such-token"})
    assert response.status_code == 401


def test_denied_by_subject_access_review_is_403_naming_verb_resource_and_user(
    aggregated: ServerProcess,
) -> None:
    response = call(
        aggregated,
        f"{SLICES}/gpu-slice",
        headers={"Authorization": "Bearer mallory-token"},
    )
    assert response.status_code == 403
    status = response.json()
    assert status["kind"] == "Status"
    assert status["reason"] == "Forbidden"
    assert status["message"] == (
        f'resourceslicepatches.{OURS} "gpu-slice" is forbidden: User "mallory" cannot get'
        f' resource "resourceslicepatches" in API group "{OURS}" at the cluster scope:'
        " denied by the test policy"
    )


def test_system_masters_and_health_need_no_review(
    aggregated: ServerProcess, pki: PKI, kube: KubeAPIDouble
) -> None:
    """The aggregator's availability probe (system:masters) is answered without a round trip."""
    proxy = pki.identity("front-proxy-ca", "front-proxy-client")
    reviews = len(kube.access_reviews)
    probe = [("X-Remote-User", "system:kube-aggregator"), ("X-Remote-Group", "system:masters")]
    assert call(aggregated, f"/apis/{OURS}/v1alpha3", proxy, probe).status_code == 200
    assert call(aggregated, "/healthz").status_code == 200
    assert len(kube.access_reviews) == reviews


@pytest.fixture
def from_configmap(
    tmp_path: Path, pki: PKI, upstream: ServerProcess
) -> Iterator[tuple[ServerProcess, KubeAPIDouble]]:
    """No CA flags: the CAs and header names come from the ConfigMap, read every 0.2 s."""
    kube = KubeAPIDouble(tmp_path / "kube").start()
    kube.configmap_data = {
        "client-ca-file": pki.ca_pem("client-ca"),
        "requestheader-client-ca-file": pki.ca_pem("front-proxy-ca"),
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
    }
    kubeconfig = kube.write_kubeconfig(tmp_path / "kube.kubeconfig")
    proc = start_server(
        tmp_path / "server",
        [
            "--mode",
            "aggregated",
            "--kubeconfig",
            str(upstream.kubeconfig),
            "--group",  # the upstream serves resource.k8s.io itself
            "resource.x-k8s.io",
            "--authentication-kubeconfig",
            str(kubeconfig),
            "--authorization-kubeconfig",
            str(kubeconfig),
            "--authentication-config-resync-period",
            "0.2",
        ],
    )
    yield proc, kube
    proc.stop()
    kube.stop()


def test_configmap_configures_front_proxy_and_a_rotated_ca_takes_effect(
    from_configmap: tuple[ServerProcess, KubeAPIDouble], pki: PKI
) -> None:
    server, kube = from_configmap
    old_proxy = pki.identity("front-proxy-ca", "front-proxy-client")
    new_proxy = pki.identity("front-proxy-ca-2", "front-proxy-client")
    headers = [("X-Remote-User", "dave")]
    assert call(server, SLICES, old_proxy, headers).status_code == 200
    assert call(server, SLICES, new_proxy, headers).status_code == 401

    kube.configmap_data = {
        **(kube.configmap_data or {}),
        "requestheader-client-ca-file": pki.ca_pem("front-proxy-ca-2"),
    }
    wait_for(lambda: call(server, SLICES, new_proxy, headers).status_code == 200)
    assert call(server, SLICES, old_proxy, headers).status_code == 401
    alice = pki.identity("client-ca", "alice")
    assert call(server, SLICES, alice).status_code == 200


def test_unreadable_configmap_is_no_failed_start(
    tmp_path: Path, pki: PKI, upstream: ServerProcess
) -> None:
    """Forbidden to read the ConfigMap: the server starts, certificates authenticate nobody,
    tokens still work; once it becomes readable, the front proxy is believed."""
    kube = KubeAPIDouble(tmp_path / "kube", users={"carol-token": {"username": "carol"}})
    kube.start()
    kubeconfig = kube.write_kubeconfig(tmp_path / "kube.kubeconfig")
    server = start_server(
        tmp_path / "server",
        [
            "--mode",
            "aggregated",
            "--kubeconfig",
            str(upstream.kubeconfig),
            "--group",  # the upstream serves resource.k8s.io itself
            "resource.x-k8s.io",
            "--authentication-kubeconfig",
            str(kubeconfig),
            "--authorization-kubeconfig",
            str(kubeconfig),
            "--authentication-config-resync-period",
            "0.2",
        ],
    )
    try:
        assert kube.configmap_reads >= 1
        proxy = pki.identity("front-proxy-ca", "front-proxy-client")
        headers = [("X-Remote-User", "dave")]
        assert call(server, SLICES, proxy, headers).status_code == 401
        assert (
            call(server, SLICES, headers={"Authorization": "Bearer carol-token"}).status_code == 200
        )
        assert "cannot read ConfigMap kube-system/extension-apiserver-authentication" in (
            server.log.read_text()
        )
        kube.configmap_data = {"requestheader-client-ca-file": pki.ca_pem("front-proxy-ca")}
        wait_for(lambda: call(server, SLICES, proxy, headers).status_code == 200)
    finally:
        server.stop()
        kube.stop()


def _kubectl_as(server: ServerProcess, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    kubeconfig = server.workdir / f"{token}.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "dra",
                        "cluster": {
                            "server": server.url,
                            "certificate-authority": str(server.ca),
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "dra", "context": {"cluster": "dra", "user": "u"}}],
                "current-context": "dra",
            }
        )
    )
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(server.workdir)}
    return subprocess.run(
        [kubectl_binary(), *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_kubectl_with_a_token_the_kube_apiserver_knows(aggregated: ServerProcess) -> None:
    allowed = _kubectl_as(aggregated, "carol-token", "get", f"resourceslicepatches.{OURS}")
    assert allowed.returncode == 0, allowed.stderr
    assert "No resources found" in allowed.stderr
    denied = _kubectl_as(aggregated, "mallory-token", "get", f"resourceslicepatches.{OURS}")
    assert denied.returncode != 0
    assert (
        f"Error from server (Forbidden): resourceslicepatches.{OURS} is forbidden: User"
        f' "mallory" cannot list resource "resourceslicepatches" in API group "{OURS}" at'
        " the cluster scope: denied by the test policy"
    ) in denied.stderr

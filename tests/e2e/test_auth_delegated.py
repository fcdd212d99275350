"""Aggregated mode's authentication and authorization, over real TLS with real processes.

No kube-apiserver can be installed here (no registry this project uses ships one), so a
second process of this server, in standalone mode, plays it: it serves the slices the
aggregated server reads, and TokenReview and SubjectAccessReview for real — tokens are those
of its token file, decisions those of its RBAC, with roles and bindings applied to it by
kubectl. The aggregated server authenticates to it as a ServiceAccount bound to
``system:auth-delegator``. Only the ``extension-apiserver-authentication`` ConfigMap, which
standalone does not serve, comes from the loopback front of ``kubeapi_double`` (for the
tests that read it). Who the aggregated server took a caller to be is read from its access
log (``--access-log``); what it asked of the kube-apiserver, from that server's access log;
what was decided, from the 401 and 403 ``Status`` answers. Certificates come from the
project's own code.
"""

from __future__ import annotations

import os
import secrets
import ssl
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from apiserver.server.certs import cert_pem, issue_client_cert, key_pem, make_ca
from devtools.waiting import wait_for

from .access_log import Entry, access_entries, wait_for_entry
from .harness import ServerProcess, kubectl_binary, start_server
from .kubeapi_double import KubeAPIDouble, write_token_kubeconfig

OURS = "resource.x-k8s.io"
SLICES = f"/apis/{OURS}/v1alpha3/resourceslicepatches"  # a kind the aggregated server serves
SERVICE_ACCOUNT = "system:serviceaccount:dra-system:dra-apiserver"

POLICY = f"""\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: dra-apiserver-auth-delegator
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}}
subjects: [{{kind: ServiceAccount, name: dra-apiserver, namespace: dra-system}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: slicepatch-reader
rules:
- apiGroups: ["{OURS}"]
  resources: ["resourceslicepatches"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: slicepatch-readers
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: slicepatch-reader}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: gpu-users}}
- {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: dra-admins}}
- {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: ops}}
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}}
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: dave}}
"""
"""The kube-apiserver's policy: the aggregated server may review tokens and access; the
readers of our patches are the groups gpu-users, dra-admins and ops (bob, erin and carol
are readers by their groups only), and alice and dave by name. mallory, heidi and marker
are nobody's; ivan and judy get roles of their own in the AllocationReview test."""


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
    method: str = "GET",
) -> httpx.Response:
    context = ssl.create_default_context(cafile=str(server.ca))
    if identity is not None:
        context.load_cert_chain(str(identity.cert), str(identity.key))
    with httpx.Client(base_url=server.url, verify=context, timeout=30) as client:
        return client.request(method, path, headers=headers)


FRONT_PROXY_HEADERS = [
    ("X-Remote-User", "bob"),
    ("X-Remote-Group", "developers"),
    ("X-Remote-Group", "gpu-users"),
    ("X-Remote-Extra-Scopes", "view"),
    ("X-Remote-Extra-Scopes", "edit"),
    ("X-Remote-Extra-Example.com%2fTeam", "dra"),
]


@dataclass
class Kube:
    """The standalone server playing the kube-apiserver, and the tokens of its token file."""

    server: ServerProcess
    tokens: dict[str, str]

    def bearer(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[user]}"}

    def delegation_kubeconfig(self, path: Path) -> Path:
        """A kubeconfig of the aggregated server's ServiceAccount, straight to the server."""
        return write_token_kubeconfig(
            path, self.server.url, self.server.ca, self.tokens[SERVICE_ACCOUNT]
        )

    def reviews(self, resource: str) -> list[Entry]:
        """The reviews (``tokenreviews``, ``subjectaccessreviews``) the ServiceAccount asked."""
        return [
            e
            for e in access_entries(self.server)
            if e.get("resource") == resource
            and e.get("verb") == "create"
            and e.get("user", {}).get("username") == SERVICE_ACCOUNT
        ]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return PKI(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    """Where aggregated mode reads slices, claims, classes and nodes, and has tokens and
    access reviewed: a standalone process of this server with its token file and RBAC."""
    workdir = tmp_path_factory.mktemp("kube")
    users = {
        "admin": ("admin", "system:masters"),
        SERVICE_ACCOUNT: ("sa-1", "system:serviceaccounts,system:serviceaccounts:dra-system"),
        "carol": ("c-1", "ops"),
        "mallory": ("m-1", ""),
        "heidi": ("h-1", ""),
        "marker": ("x-1", ""),
        "ivan": ("i-1", ""),
        "judy": ("j-1", ""),
    }
    tokens = {user: secrets.token_urlsafe(16) for user in users}
    token_file = workdir / "tokens.csv"
    token_file.write_text(
        "".join(f'{tokens[u]},{u},{uid},"{groups}"\n' for u, (uid, groups) in users.items())
    )
    proc = start_server(workdir, ["--token-auth-file", str(token_file), "--access-log"])
    proc.kubectl("apply", "-f", "-", input=POLICY)
    yield Kube(proc, tokens)
    proc.stop()


def aggregated_args(kube: Kube, authentication: Path, authorization: Path) -> list[str]:
    return [
        "--mode",
        "aggregated",
        "--kubeconfig",  # the data, read as the kube-apiserver's admin
        str(kube.server.kubeconfig),
        "--group",  # the kube-apiserver serves resource.k8s.io itself
        OURS,
        "--authentication-kubeconfig",
        str(authentication),
        "--authorization-kubeconfig",
        str(authorization),
        "--access-log",
    ]


@pytest.fixture(scope="module")
def aggregated(
    tmp_path_factory: pytest.TempPathFactory, pki: PKI, kube: Kube
) -> Iterator[ServerProcess]:
    """Every CA by flag (no ConfigMap read); tokens and authorization by the standalone;
    token reviews cached long, access decisions a second (RBAC changes mid-test)."""
    workdir = tmp_path_factory.mktemp("aggregated")
    delegation = kube.delegation_kubeconfig(workdir / "delegation.kubeconfig")
    proc = start_server(
        workdir,
        [
            *aggregated_args(kube, delegation, delegation),
            "--requestheader-client-ca-file",
            str(pki.ca("front-proxy-ca")),
            "--requestheader-allowed-names",
            "front-proxy-client",
            "--client-ca-file",
            str(pki.bundle("client-cas", "client-ca", "client-root")),
            "--authentication-token-webhook-cache-ttl",
            "300",
            "--authorization-webhook-cache-authorized-ttl",
            "1",
            "--authorization-webhook-cache-unauthorized-ttl",
            "1",
        ],
    )
    yield proc
    proc.stop()


def _line_of(server: ServerProcess, user: str, path: str = SLICES) -> Entry:
    """The aggregated server's access line of ``user``'s last request for ``path``."""
    return wait_for_entry(
        server,
        lambda e: e.get("user", {}).get("username") == user and e["URI"].startswith(path),
    )


def _reviews_settle(kube: Kube, resource: str, count: int) -> None:
    """Wait until the kube-apiserver has answered ``count`` reviews of ``resource``; then
    assert no more came (a later, reviewed request was the positive signal)."""
    wait_for(lambda: len(kube.reviews(resource)) >= count, f"{count} {resource}")
    assert len(kube.reviews(resource)) == count


def _marker_review(aggregated: ServerProcess, kube: Kube) -> None:
    """A request that surely needs a SubjectAccessReview (a name never asked about), by a
    user of its own whom the kube-apiserver's RBAC lets read nothing."""
    response = call(
        aggregated, f"{SLICES}/marker-{uuid.uuid4().hex[:8]}", None, kube.bearer("marker")
    )
    assert response.status_code == 403, response.text


def test_front_proxy_names_the_user_groups_and_extra(
    aggregated: ServerProcess, pki: PKI, kube: Kube
) -> None:
    proxy = pki.identity("front-proxy-ca", "front-proxy-client")
    reviews = len(kube.reviews("subjectaccessreviews"))
    # bob is a reader only through gpu-users: the review carried the proxy's groups.
    response = call(aggregated, SLICES, proxy, FRONT_PROXY_HEADERS)
    assert response.status_code == 200, response.text
    # The kube-apiserver logs its answer once it is sent: wait for the line.
    wait_for(lambda: len(kube.reviews("subjectaccessreviews")) > reviews, "bob's review")
    line = _line_of(aggregated, "bob")
    assert line["user"]["groups"] == ["developers", "gpu-users", "system:authenticated"]
    assert line["user"]["extra"] == {"scopes": ["view", "edit"], "example.com/team": ["dra"]}
    assert {k: line[k] for k in ("verb", "apiGroup", "apiVersion", "resource")} == {
        "verb": "list",
        "apiGroup": OURS,
        "apiVersion": "v1alpha3",
        "resource": "resourceslicepatches",
    }
    # Without the group, the kube-apiserver's RBAC has nothing for bob.
    alone = [h for h in FRONT_PROXY_HEADERS if h != ("X-Remote-Group", "gpu-users")]
    refused = call(aggregated, SLICES, proxy, alone)
    assert refused.status_code == 403
    assert 'User "bob" cannot list resource "resourceslicepatches"' in refused.json()["message"]


@pytest.mark.parametrize(
    "who", ["no certificate", "untrusted certificate", "certificate CN not allowed"]
)
def test_front_proxy_headers_without_the_proxy_certificate_are_ignored(
    aggregated: ServerProcess, pki: PKI, kube: Kube, who: str
) -> None:
    identity = {
        "no certificate": None,
        # signed by a CA nobody configured, with the proxy's very name
        "untrusted certificate": pki.identity("stranger-ca", "front-proxy-client"),
        # the front-proxy CA signed it, but its CN is not an allowed name
        "certificate CN not allowed": pki.identity("front-proxy-ca", "someone-else"),
    }[who]
    reviews = len(kube.reviews("subjectaccessreviews"))
    response = call(aggregated, f"{SLICES}?who={who[:2]}", identity, FRONT_PROXY_HEADERS)
    assert response.status_code == 401, response.text
    assert response.json()["reason"] == "Unauthorized"
    line = wait_for_entry(aggregated, lambda e: e["URI"] == f"{SLICES}?who={who[:2]}")
    assert line["resp"] == 401
    assert "user" not in line
    _marker_review(aggregated, kube)
    _reviews_settle(kube, "subjectaccessreviews", reviews + 1)  # the marker's only


def test_client_certificate_names_the_user_and_groups(aggregated: ServerProcess, pki: PKI) -> None:
    alice = pki.identity("client-ca", "alice", ("dra-admins", "gpu-users"))
    response = call(aggregated, SLICES, alice)
    assert response.status_code == 200, response.text
    line = _line_of(aggregated, "alice")
    assert line["user"]["groups"] == ["dra-admins", "gpu-users", "system:authenticated"]


def test_client_certificate_through_the_intermediate_it_sends(
    aggregated: ServerProcess, pki: PKI
) -> None:
    """The CA file holds the root only; the client sends its intermediate after its own."""
    pki.ca("client-intermediate", issuer="client-root")
    erin = pki.identity(
        "client-intermediate", "erin", ("dra-admins",), send=("client-intermediate",)
    )
    # erin is a reader only through dra-admins.
    response = call(aggregated, SLICES, erin)
    assert response.status_code == 200, response.text
    assert _line_of(aggregated, "erin")["user"]["groups"] == ["dra-admins", "system:authenticated"]
    alone = pki.identity("client-intermediate", "frank")
    assert call(aggregated, SLICES, alone).status_code == 401


def test_client_certificate_of_another_ca_is_401_not_a_failed_handshake(
    aggregated: ServerProcess, pki: PKI
) -> None:
    stranger = pki.identity("stranger-ca", "alice", ("system:masters",))
    response = call(aggregated, SLICES, stranger)
    assert response.status_code == 401


def test_bearer_token_by_token_review_cached(aggregated: ServerProcess, kube: Kube) -> None:
    reviews = len(kube.reviews("tokenreviews"))
    assert call(aggregated, SLICES, headers=kube.bearer("carol")).status_code == 200
    assert call(aggregated, f"{SLICES}?limit=1", headers=kube.bearer("carol")).status_code == 200
    # A token never seen is reviewed: after its review, carol's token was reviewed once —
    # the second request was answered from the cache.
    assert call(aggregated, SLICES, headers={"Authorization": "Bearer marker"}).status_code == 401
    _reviews_settle(kube, "tokenreviews", reviews + 2)
    review = kube.reviews("tokenreviews")[reviews]
    assert review["apiGroup"] == "authentication.k8s.io"
    assert review["apiVersion"] == "v1"
    assert review["resp"] == 201
    line = _line_of(aggregated, "carol")
    assert line["user"]["uid"] == "c-1"
    assert line["user"]["groups"] == ["ops", "system:authenticated"]


def test_unknown_bearer_token_is_401(aggregated: ServerProcess) -> None:
    response = call(aggregated, SLICES, headers={"Authorization": "Bearer no-such-token"})
    assert response.status_code == 401


def test_denied_by_subject_access_review_is_403_naming_verb_resource_and_user(
    aggregated: ServerProcess, kube: Kube
) -> None:
    response = call(aggregated, f"{SLICES}/gpu-slice", headers=kube.bearer("mallory"))
    assert response.status_code == 403
    status = response.json()
    assert status["kind"] == "Status"
    assert status["reason"] == "Forbidden"
    # RBAC gives no reason for what it does not grant, so neither does the message.
    assert status["message"] == (
        f'resourceslicepatches.{OURS} "gpu-slice" is forbidden: User "mallory" cannot get'
        f' resource "resourceslicepatches" in API group "{OURS}" at the cluster scope'
    )
    assert status["details"] == {"name": "gpu-slice", "group": OURS, "kind": "resourceslicepatches"}


def test_rbac_of_the_kube_apiserver_decides(aggregated: ServerProcess, kube: Kube) -> None:
    """A binding applied to the kube-apiserver lets heidi in; deleting it shuts her out
    again (decisions are cached for a second here)."""
    heidi = kube.bearer("heidi")
    denied = call(aggregated, SLICES, headers=heidi)
    assert denied.status_code == 403
    assert denied.json()["message"] == (
        f'resourceslicepatches.{OURS} is forbidden: User "heidi" cannot list resource'
        f' "resourceslicepatches" in API group "{OURS}" at the cluster scope'
    )
    binding = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: heidi-reads
  namespace: team-h
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: slicepatch-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: heidi}]
"""
    kube.server.kubectl("create", "namespace", "team-h")
    kube.server.kubectl("apply", "-f", "-", input=binding)
    # A RoleBinding grants in its namespace only; our patches are cluster-scoped.
    assert call(aggregated, SLICES, headers=heidi).status_code == 403
    kube.server.kubectl(
        "create",
        "clusterrolebinding",
        "heidi-reads",
        "--clusterrole=slicepatch-reader",
        "--user=heidi",
    )
    wait_for(lambda: call(aggregated, SLICES, headers=heidi).status_code == 200, "heidi allowed")
    gone = call(aggregated, f"{SLICES}/x", headers=heidi)
    assert gone.status_code == 404  # get is granted too; there is no such patch
    delete = call(aggregated, f"{SLICES}/x", headers=heidi, method="DELETE")
    assert delete.status_code == 403
    assert 'User "heidi" cannot delete resource "resourceslicepatches"' in delete.json()["message"]
    kube.server.kubectl("delete", "clusterrolebinding", "heidi-reads")
    wait_for(lambda: call(aggregated, SLICES, headers=heidi).status_code == 403, "heidi denied")


def test_system_masters_and_health_need_no_review(
    aggregated: ServerProcess, pki: PKI, kube: Kube
) -> None:
    """The aggregator's availability probe (system:masters) is answered without a round trip."""
    proxy = pki.identity("front-proxy-ca", "front-proxy-client")
    reviews = len(kube.reviews("subjectaccessreviews"))
    probe = [("X-Remote-User", "system:kube-aggregator"), ("X-Remote-Group", "system:masters")]
    assert call(aggregated, f"/apis/{OURS}/v1alpha3", proxy, probe).status_code == 200
    assert call(aggregated, "/healthz").status_code == 200
    _marker_review(aggregated, kube)
    _reviews_settle(kube, "subjectaccessreviews", reviews + 1)  # the marker's only


@pytest.fixture
def from_configmap(
    tmp_path: Path, pki: PKI, kube: Kube
) -> Iterator[tuple[ServerProcess, KubeAPIDouble]]:
    """No CA flags: the CAs and header names come from the ConfigMap, read every 0.2 s."""
    front = KubeAPIDouble(tmp_path / "front", kube.server, kube.tokens[SERVICE_ACCOUNT]).start()
    front.configmap_data = {
        "client-ca-file": pki.ca_pem("client-ca"),
        "requestheader-client-ca-file": pki.ca_pem("front-proxy-ca"),
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
    }
    proc = start_server(
        tmp_path / "server",
        [
            *aggregated_args(
                kube,
                front.write_kubeconfig(tmp_path / "front.kubeconfig"),
                kube.delegation_kubeconfig(tmp_path / "delegation.kubeconfig"),
            ),
            "--authentication-config-resync-period",
            "0.2",
        ],
    )
    yield proc, front
    proc.stop()
    front.stop()


def test_configmap_configures_front_proxy_and_a_rotated_ca_takes_effect(
    from_configmap: tuple[ServerProcess, KubeAPIDouble], pki: PKI
) -> None:
    server, front = from_configmap
    old_proxy = pki.identity("front-proxy-ca", "front-proxy-client")
    new_proxy = pki.identity("front-proxy-ca-2", "front-proxy-client")
    headers = [("X-Remote-User", "dave")]
    assert call(server, SLICES, old_proxy, headers).status_code == 200
    assert call(server, SLICES, new_proxy, headers).status_code == 401

    front.configmap_data = {
        **(front.configmap_data or {}),
        "requestheader-client-ca-file": pki.ca_pem("front-proxy-ca-2"),
    }
    wait_for(lambda: call(server, SLICES, new_proxy, headers).status_code == 200)
    assert call(server, SLICES, old_proxy, headers).status_code == 401
    alice = pki.identity("client-ca", "alice")
    assert call(server, SLICES, alice).status_code == 200


def test_unreadable_configmap_is_no_failed_start(tmp_path: Path, pki: PKI, kube: Kube) -> None:
    """Forbidden to read the ConfigMap: the server starts, certificates authenticate nobody,
    tokens still work (reviewed by the kube-apiserver through the front); once it becomes
    readable, the front proxy is believed."""
    front = KubeAPIDouble(tmp_path / "front", kube.server, kube.tokens[SERVICE_ACCOUNT]).start()
    kubeconfig = front.write_kubeconfig(tmp_path / "front.kubeconfig")
    server = start_server(
        tmp_path / "server",
        [
            *aggregated_args(kube, kubeconfig, kubeconfig),
            "--authentication-config-resync-period",
            "0.2",
        ],
    )
    try:
        assert front.configmap_reads >= 1
        proxy = pki.identity("front-proxy-ca", "front-proxy-client")
        headers = [("X-Remote-User", "dave")]
        assert call(server, SLICES, proxy, headers).status_code == 401
        assert call(server, SLICES, headers=kube.bearer("carol")).status_code == 200
        assert "cannot read ConfigMap kube-system/extension-apiserver-authentication" in (
            server.log.read_text()
        )
        front.configmap_data = {"requestheader-client-ca-file": pki.ca_pem("front-proxy-ca")}
        wait_for(lambda: call(server, SLICES, proxy, headers).status_code == 200)
    finally:
        server.stop()
        front.stop()


def _kubectl_as(server: ServerProcess, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    kubeconfig = write_token_kubeconfig(
        server.workdir / f"{uuid.uuid4().hex[:8]}.kubeconfig", server.url, server.ca, token
    )
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(server.workdir)}
    return subprocess.run(
        [kubectl_binary(), *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_kubectl_with_a_token_the_kube_apiserver_knows(
    aggregated: ServerProcess, kube: Kube
) -> None:
    allowed = _kubectl_as(aggregated, kube.tokens["carol"], "get", f"resourceslicepatches.{OURS}")
    assert allowed.returncode == 0, allowed.stderr
    assert "No resources found" in allowed.stderr
    denied = _kubectl_as(aggregated, kube.tokens["mallory"], "get", f"resourceslicepatches.{OURS}")
    assert denied.returncode != 0
    assert (
        f"Error from server (Forbidden): resourceslicepatches.{OURS} is forbidden: User"
        f' "mallory" cannot list resource "resourceslicepatches" in API group "{OURS}" at'
        " the cluster scope"
    ) in denied.stderr.splitlines()
    # The aggregated server's access log names who asked, for kubectl's requests too (its
    # list, not the discovery requests kubectl may send first).
    line = wait_for_entry(
        aggregated,
        lambda e: (
            e.get("user", {}).get("username") == "mallory"
            and e.get("userAgent", "").startswith("kubectl")
            and e.get("resource") == "resourceslicepatches"
        ),
    )
    assert line["resp"] == 403
    assert line["verb"] == "list"
    assert line["resource"] == "resourceslicepatches"


REVIEW_POLICY = f"""\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: allocation-reviewer}}
rules:
- {{apiGroups: ["{OURS}"], resources: [allocationreviews], verbs: [create]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: allocation-reviewers}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: allocation-reviewer}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: ivan}}
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: judy}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: claim-reader, namespace: team-j}}
rules:
- {{apiGroups: [resource.k8s.io], resources: [resourceclaims], verbs: [get]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: claim-readers, namespace: team-j}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: claim-reader}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: judy}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: judys, namespace: team-j}}
spec:
  devices:
    requests:
    - name: secret-request-name
      exactly: {{deviceClassName: gpu.example.com, count: 1}}
"""


def test_allocation_review_reads_claims_as_the_kube_apiserver_allows(
    aggregated: ServerProcess, kube: Kube
) -> None:
    """A review that names a stored claim is authorized by SubjectAccessReview for ``get``
    on it: ivan (who may only create reviews) gets the same 403 for judy's claim and for
    one that does not exist, judy gets her answer, and reserving needs ``create`` on
    devicereservations, which neither holds. The aggregated server has no policy of its own:
    judy's Role lives in the kube-apiserver."""
    kube.server.kubectl("create", "namespace", "team-j")
    kube.server.kubectl("apply", "-f", "-", input=REVIEW_POLICY)
    path = f"/apis/{OURS}/v1alpha3/allocationreviews"

    def review(user: str, name: str, reserve: bool = False) -> httpx.Response:
        spec = {"claims": [{"namespace": "team-j", "name": name}], "reserve": reserve}
        body = {"apiVersion": f"{OURS}/v1alpha3", "kind": "AllocationReview", "spec": spec}
        context = ssl.create_default_context(cafile=str(aggregated.ca))
        with httpx.Client(base_url=aggregated.url, verify=context, timeout=30) as client:
            return client.post(path, json=body, headers=kube.bearer(user))

    # The claim reaches the aggregated server through its watch of the kube-apiserver.
    wait_for(lambda: review("judy", "judys").status_code == 201, "judy's claim reviewed")
    existing, missing = review("ivan", "judys"), review("ivan", "no-such-claim")
    for answer in (existing, missing):
        assert answer.status_code == 403, answer.text
        assert answer.json()["reason"] == "Forbidden"
        assert answer.json()["details"]["kind"] == "resourceclaims"
    assert existing.json()["message"].replace("judys", "X") == missing.json()["message"].replace(
        "no-such-claim", "X"
    )
    assert "secret-request-name" not in existing.text
    held = review("judy", "judys", reserve=True)
    assert held.status_code == 403, held.text
    assert held.json()["details"]["kind"] == "devicereservations"

"""The scheduler shim as kube-scheduler meets it: a separate process serving HTTPS with
its own certificate, reading the server with a kubeconfig of a user that holds only the
bootstrap ``dra-scheduler-shim`` ClusterRole. A pod without claims passes filter
everywhere (Nodes or NodeNames), gets no scores, and /bind binds it through
``pods/binding`` (kubectl shows the node); a second bind is the server's conflict in the
protocol's ``Error``. The role allows each call the shim makes, and little else."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
import yaml

from apiserver.server.kubeconfig import write_kubeconfig

from .harness import ServerProcess, ShimProcess, start_server, start_shim
from .objects import unique

SHIM_BINDING = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: scheduler-shim
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: dra-scheduler-shim}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: scheduler}]
"""


@pytest.fixture(scope="module")
def tokens() -> dict[str, str]:
    return {user: secrets.token_urlsafe(16) for user in ("admin", "scheduler")}


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, tokens: dict[str, str]
) -> Iterator[ServerProcess]:
    """A server of this module's own, with a user for the shim bound to its role."""
    workdir = tmp_path_factory.mktemp("shimserver")
    token_file = workdir / "tokens.csv"
    token_file.write_text(
        f'{tokens["admin"]},admin,admin,"system:masters"\n'
        f"{tokens['scheduler']},scheduler,scheduler-uid\n"
    )
    proc = start_server(workdir, ["--token-auth-file", str(token_file)])
    proc.kubectl("apply", "-f", "-", input=SHIM_BINDING)
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def shim(
    server: ServerProcess, tokens: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ShimProcess]:
    workdir = tmp_path_factory.mktemp("shim")
    kubeconfig = workdir / "kubeconfig"
    write_kubeconfig(kubeconfig, server.url, server.ca, tokens["scheduler"], user="scheduler")
    proc = start_shim(server, workdir, kubeconfig=kubeconfig)
    yield proc
    proc.stop()


@pytest.mark.parametrize(
    ("verb", "group", "resource", "subresource", "allowed"),
    [
        ("create", "resource.k8s.io", "allocationreviews", "", True),
        ("update", "resource.k8s.io", "resourceclaims", "status", True),
        ("watch", "resource.k8s.io", "resourceclaims", "", True),
        ("list", "resource.k8s.io", "devices", "", True),
        ("delete", "resource.k8s.io", "devicereservations", "", True),
        ("create", "", "pods", "binding", True),
        ("get", "", "pods", "", True),
        ("update", "resource.k8s.io", "resourceclaims", "", False),
        ("delete", "", "pods", "", False),
        ("create", "resource.k8s.io", "resourceslices", "", False),
    ],
)
def test_the_shim_role_allows_what_the_shim_does(
    server: ServerProcess,
    tokens: dict[str, str],
    verb: str,
    group: str,
    resource: str,
    subresource: str,
    allowed: bool,
) -> None:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "verb": verb,
                "group": group,
                "resource": resource,
                "subresource": subresource,
                "namespace": "default",
            }
        },
    }
    with server.client() as client:
        client.headers["Authorization"] = f"Bearer {tokens['scheduler']}"
        answer = client.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", json=review)
    assert answer.status_code == 201, answer.text
    assert answer.json()["status"]["allowed"] is allowed


def _pod(server: ServerProcess) -> dict[str, object]:
    name = unique("plain")
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    with server.client() as client:
        stored: dict[str, object] = client.get(f"/api/v1/namespaces/default/pods/{name}").json()
    return stored


def test_filter_and_prioritize_of_a_pod_without_claims(
    server: ServerProcess, shim: ShimProcess
) -> None:
    pod = _pod(server)
    nodes = [{"metadata": {"name": n}} for n in ("node-1", "node-2")]
    with shim.client() as client:
        by_name = client.post("/filter", json={"Pod": pod, "Nodes": None, "NodeNames": ["node-1"]})
        by_node = client.post("/filter", json={"Pod": pod, "Nodes": {"items": nodes}})
        scores = client.post("/prioritize", json={"Pod": pod, "NodeNames": ["node-1", "node-2"]})
    assert by_name.json() == {
        "Nodes": None,
        "NodeNames": ["node-1"],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }
    assert [n["metadata"]["name"] for n in by_node.json()["Nodes"]["items"]] == ["node-1", "node-2"]
    assert by_node.json()["NodeNames"] is None
    assert scores.json() == [{"Host": "node-1", "Score": 0}, {"Host": "node-2", "Score": 0}]


def test_bind_binds_the_pod_once(server: ServerProcess, shim: ShimProcess) -> None:
    pod = _pod(server)
    meta = pod["metadata"]
    assert isinstance(meta, dict)
    args = {
        "PodName": meta["name"],
        "PodNamespace": "default",
        "PodUID": meta["uid"],
        "Node": "node-7",
    }
    with shim.client() as client:
        first = client.post("/bind", json=args)
        second = client.post("/bind", json={**args, "Node": "node-8"})
    assert first.status_code == 200
    assert first.json() == {"Error": ""}
    assert 'already assigned to node "node-7"' in second.json()["Error"]

    wide = server.kubectl("get", "pod", meta["name"], "-o", "wide").stdout.splitlines()
    assert wide[1].split()[wide[0].split().index("NODE")] == "node-7"

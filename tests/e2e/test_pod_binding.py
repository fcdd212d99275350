"""``pods/binding`` as a scheduler uses it: a v1 Binding sets the pod's node once, kubectl
shows it in NODE, a second binding is a 409 and bad bodies are refused naming the field."""

from __future__ import annotations

import yaml

from .harness import ServerProcess
from .objects import unique


def _pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def _binding(pod: str, node: str, **target: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod},
        "target": {"kind": "Node", "name": node, **target},
    }


def test_binding_sets_node_once_and_kubectl_shows_it(server: ServerProcess) -> None:
    name = unique("bound")
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(_pod(name)))
    path = f"/api/v1/namespaces/default/pods/{name}/binding"
    with server.client() as client:
        answer = client.post(path, json=_binding(name, "node-a"))
        assert answer.status_code == 201, answer.text
        assert answer.json()["status"] == "Success"

        again = client.post(path, json=_binding(name, "node-b"))
        assert again.status_code == 409
        assert again.json()["reason"] == "Conflict"
        assert 'already assigned to node "node-a"' in again.json()["message"]

        assert client.get(path).status_code == 405
        assert "POST" in client.get(path).headers["Allow"]

    wide = server.kubectl("get", "pods", name, "-o", "wide").stdout.splitlines()
    header, row = wide[0].split(), wide[1].split()
    assert row[header.index("NODE")] == "node-a"
    assert server.kubectl("get", "pods", "--field-selector", "spec.nodeName=node-a").stdout.count(
        name
    )


def test_bad_bindings_are_refused_and_the_pod_stays_unbound(server: ServerProcess) -> None:
    name = unique("unbound")
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(_pod(name)))
    path = f"/api/v1/namespaces/default/pods/{name}/binding"
    with server.client() as client:
        no_node = client.post(path, json=_binding(name, ""))
        assert no_node.status_code == 422
        assert no_node.json()["details"]["causes"][0]["field"] == "target.name"

        wrong_kind = client.post(path, json=_binding(name, "node-a", kind="Service"))
        assert wrong_kind.status_code == 422
        assert wrong_kind.json()["details"]["causes"][0]["field"] == "target.kind"

        other_name = client.post(path, json=_binding("someone-else", "node-a"))
        assert other_name.status_code == 400

        absent = unique("none")
        missing = client.post(
            f"/api/v1/namespaces/default/pods/{absent}/binding", json=_binding(absent, "node-a")
        )
        assert missing.status_code == 404

        stored = client.get(f"/api/v1/namespaces/default/pods/{name}").json()
    assert "nodeName" not in stored["spec"]

"""Core v1 Namespaces in standalone mode, driven by kubectl: the system namespaces exist from
the start, `kubectl create ns`, `kubectl get ns` (NAME, STATUS, AGE), Terminating while a
finalizer holds a deletion."""

from __future__ import annotations

import orjson
import yaml

from .harness import ServerProcess
from .objects import unique


def _status(server: ServerProcess, name: str) -> list[str]:
    out = server.kubectl("get", "ns", name).stdout.splitlines()
    assert out[0].split() == ["NAME", "STATUS", "AGE"]
    return out[1].split()[:2]


def test_system_namespaces_exist_from_the_start(fresh_server: ServerProcess) -> None:
    names = fresh_server.kubectl("get", "namespaces", "-o", "name").stdout.split()
    assert names == ["namespace/default", "namespace/kube-system"]
    assert _status(fresh_server, "default") == ["default", "Active"]
    fresh_server.stop()
    fresh_server.start()  # a restart finds them and leaves them as they are
    again = fresh_server.kubectl("get", "namespaces", "-o", "name").stdout.split()
    assert again == names


def test_create_get_and_select_namespaces(server: ServerProcess) -> None:
    name = unique("team")
    assert server.kubectl("create", "ns", name).stdout.strip() == f"namespace/{name} created"
    assert _status(server, name) == [name, "Active"]
    obj = orjson.loads(server.kubectl("get", "namespace", name, "-o", "json").stdout)
    assert obj["status"] == {"phase": "Active"}
    selected = server.kubectl(
        "get", "ns", "-l", f"kubernetes.io/metadata.name={name}", "-o", "name"
    ).stdout.split()
    assert selected == [f"namespace/{name}"]
    bad = server.kubectl("create", "ns", "not.a.label", check=False)
    assert bad.returncode != 0
    assert "metadata.name" in bad.stderr


def test_namespace_is_terminating_while_a_finalizer_holds_it(server: ServerProcess) -> None:
    name = unique("held")
    manifest = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "finalizers": ["example.com/hold"]},
    }
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    server.kubectl("delete", "ns", name, "--wait=false")
    assert _status(server, name) == [name, "Terminating"]
    server.kubectl("patch", "ns", name, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    gone = server.kubectl("get", "ns", name, check=False)
    assert gone.returncode != 0
    assert "NotFound" in gone.stderr

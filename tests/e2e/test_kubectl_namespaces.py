"""Core v1 Namespaces in standalone mode, driven by kubectl: the system namespaces exist from
the start, `kubectl create ns`, `kubectl get ns` (NAME, STATUS, AGE), Terminating while a
finalizer holds a deletion, the content deleted with the namespace, no object created into a
namespace that is missing or being deleted, and the system namespaces kept."""

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


def test_a_namespace_status_is_its_own_subresource(server: ServerProcess) -> None:
    """``namespaces/<name>/status`` is the Namespace's status, not a resource named status
    in that namespace: kubectl's --subresource=status patch writes a condition."""
    name = unique("cond")
    server.kubectl("create", "ns", name)
    condition = {"type": "Example", "status": "True", "reason": "Set", "message": "by a test"}
    patch = orjson.dumps({"status": {"conditions": [condition]}}).decode()
    server.kubectl("patch", "ns", name, "--subresource=status", "--type=merge", "-p", patch)
    obj = orjson.loads(server.kubectl("get", "namespace", name, "-o", "json").stdout)
    assert obj["status"]["conditions"] == [condition]
    assert obj["status"]["phase"] == "Active"


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
    # The namespace controller still has to empty it and remove the kubernetes finalizer.
    server.kubectl("wait", "--for=delete", f"ns/{name}", "--timeout=60s")
    gone = server.kubectl("get", "ns", name, check=False)
    assert gone.returncode != 0
    assert "NotFound" in gone.stderr


CLAIM = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: one-gpu
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
"""


def test_deleting_a_namespace_deletes_what_is_in_it(server: ServerProcess) -> None:
    team, other = unique("team"), unique("other")
    server.kubectl("create", "ns", team)
    server.kubectl("create", "ns", other)
    server.kubectl("create", "-n", team, "-f", "-", input=CLAIM)
    server.kubectl("create", "-n", other, "-f", "-", input=CLAIM)
    spec = orjson.loads(server.kubectl("get", "ns", team, "-o", "json").stdout)["spec"]
    assert spec == {"finalizers": ["kubernetes"]}

    # kubectl waits until the namespace is gone, which is after its content is.
    deleted = server.kubectl("delete", "ns", team)
    assert deleted.stdout.strip() == f'namespace "{team}" deleted'
    assert "NotFound" in server.kubectl("get", "ns", team, check=False).stderr
    left = server.kubectl("get", "resourceclaims", "-n", team, "-o", "name").stdout
    assert left.strip() == ""
    kept = server.kubectl("get", "resourceclaims", "-n", other, "-o", "name").stdout.split()
    assert kept == ["resourceclaim.resource.k8s.io/one-gpu"]


def test_objects_go_only_into_namespaces_that_exist(server: ServerProcess) -> None:
    missing = unique("nope")
    refused = server.kubectl("create", "-n", missing, "-f", "-", input=CLAIM, check=False)
    assert refused.returncode != 0
    assert f'namespaces "{missing}" not found' in refused.stderr
    assert server.kubectl("get", "resourceclaims", "-n", missing, "-o", "name").stdout == ""

    held = unique("held")
    manifest = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": held, "finalizers": ["example.com/hold"]},
    }
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    server.kubectl("delete", "ns", held, "--wait=false")
    terminating = server.kubectl("create", "-n", held, "-f", "-", input=CLAIM, check=False)
    assert terminating.returncode != 0
    assert "because it is being terminated" in terminating.stderr
    server.kubectl("patch", "ns", held, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    server.kubectl("wait", "--for=delete", f"ns/{held}", "--timeout=60s")

    for name in ("default", "kube-system"):
        system = server.kubectl("delete", "ns", name, "--wait=false", check=False)
        assert system.returncode != 0
        assert "this namespace may not be deleted" in system.stderr
        assert _status(server, name) == [name, "Active"]

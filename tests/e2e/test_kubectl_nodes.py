"""Core v1 Nodes in standalone mode, driven by kubectl: get (and -o wide), label and select,
cordon and the spec.unschedulable field selector, the status subresource, bad input."""

from __future__ import annotations

import orjson
import yaml

from .harness import ServerProcess
from .objects import unique


def _node(name: str, group: str, ready: str = "True") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "test.example.com/group": group},
        },
        "spec": {"providerID": f"example://{name}"},
        "status": {
            "conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady"}],
            "addresses": [{"type": "InternalIP", "address": "10.1.2.3"}],
            "capacity": {"cpu": "8", "memory": "32Gi"},
            "nodeInfo": {"kubeletVersion": "v1.36.1", "osImage": "Debian GNU/Linux 13"},
        },
    }


def _create(server: ServerProcess, *nodes: dict[str, object]) -> None:
    server.kubectl("create", "-f", "-", input=yaml.safe_dump_all(nodes))


def _rows(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in out.strip().splitlines()[1:]}


def test_get_nodes_prints_status_roles_version_and_wide_columns(server: ServerProcess) -> None:
    group = unique("g")
    ready, down = unique("node"), unique("node")
    _create(server, _node(ready, group), _node(down, group, ready="False"))
    server.kubectl("label", "node", ready, "node-role.kubernetes.io/gpu-worker=")

    out = server.kubectl("get", "nodes", "-l", f"test.example.com/group={group}").stdout
    assert out.splitlines()[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    rows = _rows(out)
    assert rows[ready][1:3] == ["Ready", "gpu-worker"]
    assert rows[ready][4] == "v1.36.1"
    assert rows[down][1:3] == ["NotReady", "<none>"]

    wide = server.kubectl("get", "no", ready, "-o", "wide").stdout
    header = wide.splitlines()[0].split()
    assert header[5:] == [
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ]
    assert "10.1.2.3" in wide
    assert "Debian GNU/Linux 13" in wide


def test_label_selectors_and_cordon(server: ServerProcess) -> None:
    group = unique("g")
    a, b = unique("node"), unique("node")
    _create(server, _node(a, group), _node(b, group))
    server.kubectl("label", "node", a, "gpu.example.com/present=true")
    selected = server.kubectl(
        "get", "nodes", "-l", f"test.example.com/group={group},gpu.example.com/present=true"
    ).stdout
    assert list(_rows(selected)) == [a]

    assert "cordoned" in server.kubectl("cordon", b).stdout
    cordoned = server.kubectl(
        "get",
        "nodes",
        "-l",
        f"test.example.com/group={group}",
        "--field-selector",
        "spec.unschedulable=true",
    ).stdout
    assert list(_rows(cordoned)) == [b]
    assert _rows(cordoned)[b][1] == "Ready,SchedulingDisabled"
    server.kubectl("uncordon", b)
    schedulable = server.kubectl(
        "get",
        "nodes",
        "-l",
        f"test.example.com/group={group}",
        "--field-selector",
        "spec.unschedulable=false",
        "-o",
        "name",
    ).stdout.split()
    assert sorted(schedulable) == sorted([f"node/{a}", f"node/{b}"])


def test_status_subresource_and_main_resource_keep_to_their_part(server: ServerProcess) -> None:
    """A status patch turns the node NotReady; a main-resource patch of the status does not."""
    name = unique("node")
    _create(server, _node(name, unique("g")))
    not_ready = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    server.kubectl("patch", "node", name, "--type=merge", "-p", orjson.dumps(not_ready).decode())
    assert _rows(server.kubectl("get", "node", name).stdout)[name][1] == "Ready"
    server.kubectl(
        "patch",
        "node",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        orjson.dumps(not_ready).decode(),
    )
    assert _rows(server.kubectl("get", "node", name).stdout)[name][1] == "NotReady"


def test_invalid_taint_is_refused_naming_the_field(server: ServerProcess) -> None:
    name = unique("node")
    bad = _node(name, unique("g"))
    bad["spec"] = {"taints": [{"key": "bad key", "effect": "NoSchedule"}]}
    result = server.kubectl("create", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert result.returncode != 0
    assert "spec.taints[0].key" in result.stderr
    missing = server.kubectl("get", "node", name, check=False)
    assert missing.returncode != 0
    assert "NotFound" in missing.stderr


def test_describe_node_lists_its_pods_and_what_they_request(server: ServerProcess) -> None:
    """`kubectl describe node` reads the node and lists its non-terminated pods (a pods list
    with field selectors on spec.nodeName and status.phase)."""
    name = unique("node")
    node = _node(name, unique("g"))
    node["spec"] = {
        "providerID": f"example://{name}",
        "taints": [{"key": "gpu.example.com/dedicated", "value": "ml", "effect": "NoSchedule"}],
    }
    _create(server, node)
    running, done = unique("pod"), unique("pod")
    for pod in (running, done):
        manifest = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod, "namespace": "default"},
            "spec": {
                "nodeName": name,
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.example.com/trainer:1",
                        "resources": {"requests": {"cpu": "2"}, "limits": {"memory": "4Gi"}},
                    }
                ],
            },
        }
        server.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    finished = {"status": {"phase": "Succeeded"}}
    server.kubectl(
        "patch",
        "pod",
        done,
        "-n",
        "default",
        "--subresource=status",
        "--type=merge",
        "-p",
        orjson.dumps(finished).decode(),
    )

    out = server.kubectl("describe", "node", name).stdout
    lines = out.splitlines()
    assert lines[0].split() == ["Name:", name]
    assert "gpu.example.com/dedicated=ml:NoSchedule" in out
    assert any(line.split()[:2] == ["Ready", "True"] for line in lines)
    assert "Kubelet Version:            v1.36.1" in out
    assert "Non-terminated Pods:          (1 in total)" in out
    assert any(line.split()[:2] == ["default", running] for line in lines)
    assert done not in out
    allocated = lines.index("Allocated resources:")
    cpu = next(line for line in lines[allocated:] if line.strip().startswith("cpu"))
    assert cpu.split()[:3] == ["cpu", "2", "(25%)"]  # of the node's 8 CPUs

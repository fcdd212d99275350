"""The real kubectl against ResourceSlicePatch (short name rsp): apply (client- and server-side),
replace, patch, watch, explain, dry run, strict validation, discovery, managed fields,
deletion with finalizers and the status subresource.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from .harness import ServerProcess
from .objects import LineReader, kubectl_popen, rsp, stop, unique


def _manifest(name: str, priority: int = 5, zone: str = "a") -> str:
    return f"""apiVersion: resource.k8s.io/v1alpha3
kind: ResourceSlicePatch
metadata:
  name: {name}
spec:
  devices:
    filter:
      driver: gpu.example.com
      pool: pool-a
    priority: {priority}
    attributes:
      example.com/zone:
        string: {zone}
    capacity:
      example.com/memory:
        value: 8Gi
"""


def _get(server: ServerProcess, name: str, *flags: str) -> dict[str, Any]:
    got: dict[str, Any] = json.loads(
        server.kubectl("get", "rsp", name, "-o", "json", "--show-managed-fields", *flags).stdout
    )
    return got


def _absent(server: ServerProcess, name: str) -> bool:
    result = server.kubectl("get", "rsp", name, check=False)
    return result.returncode != 0 and "NotFound" in result.stderr


def _create(server: ServerProcess, name: str, priority: int = 5) -> dict[str, Any]:
    server.kubectl("create", "-f", "-", input=json.dumps(rsp(name, priority)))
    return _get(server, name)


def test_client_side_apply(server: ServerProcess, tmp_path: Path) -> None:
    """`kubectl apply -f` creates, then a changed manifest is "configured" with the generation
    bumped and the last-applied annotation updated; re-applying it is "unchanged"."""
    name = unique("apply")
    manifest = tmp_path / "rsp.yaml"
    manifest.write_text(_manifest(name, zone="a"))
    out = server.kubectl("apply", "-f", str(manifest)).stdout
    assert out.strip() == f"resourceslicepatch.resource.k8s.io/{name} created"
    first = _get(server, name)
    assert first["metadata"]["generation"] == 1

    manifest.write_text(_manifest(name, zone="b"))
    out = server.kubectl("apply", "-f", str(manifest)).stdout
    assert out.strip() == f"resourceslicepatch.resource.k8s.io/{name} configured"
    second = _get(server, name)
    assert second["metadata"]["generation"] == 2
    assert second["spec"]["devices"]["attributes"] == {"example.com/zone": {"string": "b"}}
    assert second["spec"]["devices"]["capacity"] == {"example.com/memory": {"value": "8Gi"}}
    applied = json.loads(
        second["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert applied["spec"]["devices"]["attributes"]["example.com/zone"]["string"] == "b"
    managers = {f["manager"] for f in second["metadata"]["managedFields"]}
    assert "kubectl-client-side-apply" in managers

    out = server.kubectl("apply", "-f", str(manifest)).stdout
    assert out.strip() == f"resourceslicepatch.resource.k8s.io/{name} unchanged"
    assert (
        _get(server, name)["metadata"]["resourceVersion"] == second["metadata"]["resourceVersion"]
    )


def test_client_side_apply_removes_fields_dropped_from_the_manifest(
    server: ServerProcess, tmp_path: Path
) -> None:
    """A field removed from the manifest is removed from the object (three-way merge patch)."""
    name = unique("apply-drop")
    manifest = tmp_path / "rsp.yaml"
    manifest.write_text(_manifest(name))
    server.kubectl("apply", "-f", str(manifest))
    without_capacity = "\n".join(_manifest(name).splitlines()[:-3]) + "\n"
    manifest.write_text(without_capacity)
    assert "configured" in server.kubectl("apply", "-f", str(manifest)).stdout
    devices = _get(server, name)["spec"]["devices"]
    assert "capacity" not in devices
    assert devices["attributes"] == {"example.com/zone": {"string": "a"}}


def test_server_side_apply_and_conflicts(server: ServerProcess, tmp_path: Path) -> None:
    """`kubectl apply --server-side` records manager "kubectl" with operation Apply; after a
    client-side change of the same field a conflicting server-side apply fails with a conflict
    naming the field and the other manager; --force-conflicts takes the field over."""
    name = unique("ssa")
    manifest = tmp_path / "rsp.yaml"
    manifest.write_text(_manifest(name, priority=5))
    out = server.kubectl("apply", "--server-side", "-f", str(manifest)).stdout
    assert out.strip() == f"resourceslicepatch.resource.k8s.io/{name} serverside-applied"
    got = _get(server, name)
    [entry] = got["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry["fieldsType"]) == (
        "kubectl",
        "Apply",
        "FieldsV1",
    )
    assert "f:priority" in entry["fieldsV1"]["f:spec"]["f:devices"]

    client_side = tmp_path / "client.yaml"
    client_side.write_text(_manifest(name, priority=7))
    assert "configured" in server.kubectl("apply", "-f", str(client_side)).stdout

    manifest.write_text(_manifest(name, priority=8))
    conflict = server.kubectl("apply", "--server-side", "-f", str(manifest), check=False)
    assert conflict.returncode != 0
    assert "conflict" in conflict.stderr
    assert '"kubectl-client-side-apply"' in conflict.stderr
    assert ".spec.devices.priority" in conflict.stderr
    assert "--force-conflicts" in conflict.stderr
    assert _get(server, name)["spec"]["devices"]["priority"] == 7

    forced = server.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(manifest))
    assert "serverside-applied" in forced.stdout
    got = _get(server, name)
    assert got["spec"]["devices"]["priority"] == 8
    owners = {
        f["manager"]: f for f in got["metadata"]["managedFields"] if f["operation"] == "Apply"
    }
    assert "f:priority" in owners["kubectl"]["fieldsV1"]["f:spec"]["f:devices"]


def test_server_side_apply_with_own_field_manager(server: ServerProcess, tmp_path: Path) -> None:
    """Re-applying the same manifest changes nothing; a second applier of the same values
    becomes a co-owner without conflict and is recorded in managedFields."""
    name = unique("ssa-co")
    manifest = tmp_path / "rsp.yaml"
    manifest.write_text(_manifest(name, priority=3))
    server.kubectl("apply", "--server-side", "-f", str(manifest))
    first = _get(server, name)
    server.kubectl("apply", "--server-side", "-f", str(manifest))
    assert _get(server, name)["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    server.kubectl("apply", "--server-side", "--field-manager=other", "-f", str(manifest))
    got = _get(server, name)
    managers = {f["manager"]: f["operation"] for f in got["metadata"]["managedFields"]}
    assert managers == {"kubectl": "Apply", "other": "Apply"}
    assert got["metadata"]["generation"] == 1
    assert got["spec"] == first["spec"]


def test_edit_style_replace(server: ServerProcess) -> None:
    """get -o json, change, `kubectl replace -f -`: replaced with the generation bumped; a
    replace carrying a stale resourceVersion fails with a conflict and changes nothing."""
    name = unique("replace")
    live = _create(server, name, priority=1)
    edited = json.loads(json.dumps(live))
    edited["spec"]["devices"]["priority"] = 2
    out = server.kubectl("replace", "-f", "-", input=json.dumps(edited)).stdout
    assert out.strip() == f"resourceslicepatch.resource.k8s.io/{name} replaced"
    after = _get(server, name)
    assert after["spec"]["devices"]["priority"] == 2
    assert after["metadata"]["generation"] == 2

    live["spec"]["devices"]["priority"] = 3
    stale = server.kubectl("replace", "-f", "-", input=json.dumps(live), check=False)
    assert stale.returncode != 0
    assert "the object has been modified" in stale.stderr
    assert _get(server, name)["spec"]["devices"]["priority"] == 2


def test_kubectl_edit(server: ServerProcess, tmp_path: Path) -> None:
    """`kubectl edit` with an editor that changes the priority: "edited", generation bumped."""
    name = unique("edit")
    _create(server, name, priority=1)
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import pathlib, sys\n"
        "p = pathlib.Path(sys.argv[-1])\n"
        "p.write_text(p.read_text().replace('priority: 1', 'priority: 44'))\n"
    )
    edit = kubectl_popen(
        server, "edit", "rsp", name, env={"KUBE_EDITOR": f"{sys.executable} {editor}"}
    )
    try:
        out, err = edit.communicate(timeout=60)
    finally:
        stop(edit)
    assert edit.returncode == 0, err
    assert out.strip() == f"resourceslicepatch.resource.k8s.io/{name} edited"
    got = _get(server, name)
    assert got["spec"]["devices"]["priority"] == 44
    assert got["metadata"]["generation"] == 2


def test_patch_merge_and_json(server: ServerProcess) -> None:
    """`kubectl patch --type=merge` and `--type=json` change the spec and bump the generation."""
    name = unique("patch")
    _create(server, name, priority=1)
    merge = server.kubectl(
        "patch", "rsp", name, "--type=merge", "-p", '{"spec":{"devices":{"priority":2}}}'
    )
    assert merge.stdout.strip() == f"resourceslicepatch.resource.k8s.io/{name} patched"
    assert _get(server, name)["spec"]["devices"]["priority"] == 2
    server.kubectl(
        "patch",
        "rsp",
        name,
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/devices/priority","value":3},'
        '{"op":"add","path":"/spec/devices/filter","value":{"driver":"gpu.example.com"}}]',
    )
    got = _get(server, name)
    assert got["spec"]["devices"]["priority"] == 3
    assert got["spec"]["devices"]["filter"] == {"driver": "gpu.example.com"}
    assert got["metadata"]["generation"] == 3

    failed = server.kubectl(
        "patch",
        "rsp",
        name,
        "--type=json",
        "-p",
        '[{"op":"test","path":"/spec/devices/priority","value":99}]',
        check=False,
    )
    assert failed.returncode != 0
    assert _get(server, name)["metadata"]["resourceVersion"] == got["metadata"]["resourceVersion"]


def test_plain_kubectl_patch_is_a_strategic_merge(server: ServerProcess) -> None:
    """Plain `kubectl patch` sends a strategic merge patch, which the server applies."""
    name = unique("smp")
    _create(server, name, priority=1)
    server.kubectl("patch", "rsp", name, "-p", '{"spec":{"devices":{"priority":2}}}')
    assert _get(server, name)["spec"]["devices"]["priority"] == 2


def _row(line: str) -> list[str]:
    return line.split()


def test_get_watch(server: ServerProcess) -> None:
    """`kubectl get rsp -w` prints the current rows, then a row for each later create, change
    and delete."""
    first = unique("watch")
    second = unique("watch")
    _create(server, first, priority=11)
    watch = kubectl_popen(server, "get", "rsp", "-w")
    try:
        assert watch.stdout is not None
        out = LineReader(watch.stdout)
        header = out.wait_for(lambda line: line.startswith("NAME"))
        assert _row(header) == ["NAME", "DRIVER", "POOL", "DEVICE", "PRIORITY", "AGE"]
        assert _row(out.wait_for(lambda line: line.startswith(first + " ")))[:2] == [first, "11"]
        server.kubectl(
            "patch", "rsp", first, "--type=merge", "-p", '{"spec":{"devices":{"priority":12}}}'
        )
        assert _row(out.wait_for(lambda line: line.startswith(first + " ")))[:2] == [first, "12"]
        _create(server, second, priority=21)
        assert _row(out.wait_for(lambda line: line.startswith(second + " ")))[:2] == [second, "21"]
        server.kubectl("delete", "rsp", first)
        assert _row(out.wait_for(lambda line: line.startswith(first + " ")))[:2] == [first, "12"]
        assert watch.poll() is None
    finally:
        stop(watch)


def test_get_watch_output_watch_events(server: ServerProcess) -> None:
    """`kubectl get rsp NAME -w --output-watch-events` labels rows ADDED, MODIFIED, DELETED."""
    name = unique("watchev")
    _create(server, name, priority=1)
    watch = kubectl_popen(server, "get", "rsp", name, "-w", "--output-watch-events")
    try:
        assert watch.stdout is not None
        out = LineReader(watch.stdout)
        assert out.wait_for(lambda line: name in line).split()[:2] == ["ADDED", name]
        server.kubectl("label", "rsp", name, "seen=yes")
        assert out.wait_for(lambda line: name in line).split()[:2] == ["MODIFIED", name]
        server.kubectl("delete", "rsp", name)
        assert out.wait_for(lambda line: name in line).split()[:2] == ["DELETED", name]
    finally:
        stop(watch)


def test_explain(server: ServerProcess) -> None:
    """`kubectl explain rsp.spec.devices` shows the documented fields from OpenAPI v3."""
    out = server.kubectl("explain", "rsp.spec.devices").stdout
    assert "KIND:       ResourceSlicePatch" in out
    assert "VERSION:    v1alpha3" in out
    assert "FIELD: devices <DevicePatch>" in out
    for field in ("attributes", "capacity", "filter", "priority"):
        assert f"\n  {field}\t<" in out, field
    nested = server.kubectl("explain", "rsp.spec.devices.filter").stdout
    for field in ("deviceClassName", "driver", "pool", "device", "selectors"):
        assert f"\n  {field}\t<" in nested, field
    rpsr = server.kubectl("explain", "rpsr.spec").stdout
    assert "driver\t<string> -required-" in rpsr


def test_create_dry_run_server(server: ServerProcess) -> None:
    """`kubectl create --dry-run=server` prints the object the server would store, with
    server-set fields, and nothing is stored."""
    name = unique("dry")
    manifest = json.dumps(rsp(name))
    out = server.kubectl("create", "--dry-run=server", "-f", "-", input=manifest).stdout
    assert out.strip() == f"resourceslicepatch.resource.k8s.io/{name} created (server dry run)"
    shown = yaml.safe_load(
        server.kubectl("create", "--dry-run=server", "-f", "-", "-o", "yaml", input=manifest).stdout
    )
    assert shown["metadata"]["name"] == name
    assert shown["metadata"]["uid"]
    assert shown["metadata"]["creationTimestamp"]
    assert shown["metadata"]["generation"] == 1
    assert shown["spec"] == {"devices": {"priority": 5}}
    assert _absent(server, name)


def test_validate_strict_rejects_unknown_fields(server: ServerProcess) -> None:
    """--validate=strict rejects an unknown field, naming it, and stores nothing; with
    --validate=warn the object is created and kubectl prints the server's warning."""
    name = unique("strict")
    body = rsp(name)
    body["spec"]["devices"]["bogusField"] = 1
    result = server.kubectl(
        "create", "--validate=strict", "-f", "-", input=json.dumps(body), check=False
    )
    assert result.returncode != 0
    assert 'unknown field "spec.devices.bogusField"' in result.stderr
    assert _absent(server, name)

    warned = server.kubectl("create", "--validate=warn", "-f", "-", input=json.dumps(body))
    assert 'unknown field "spec.devices.bogusField"' in warned.stderr
    assert "bogusField" not in _get(server, name)["spec"]["devices"]


def test_api_resources(server: ServerProcess) -> None:
    """`kubectl api-resources` lists both kinds, cluster-scoped, with short names and verbs."""
    out = server.kubectl("api-resources", "-o", "wide").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert rows["resourceslicepatches"][:5] == [
        "resourceslicepatches",
        "rsp",
        "resource.k8s.io/v1alpha3",
        "false",
        "ResourceSlicePatch",
    ]
    assert rows["resourcepoolstatusrequests"][:5] == [
        "resourcepoolstatusrequests",
        "rpsr",
        "resource.k8s.io/v1alpha1",
        "false",
        "ResourcePoolStatusRequest",
    ]
    verbs = rows["resourceslicepatches"][5]
    assert verbs == "create,delete,deletecollection,get,list,patch,update,watch"
    short = server.kubectl("api-resources", "--namespaced=false", "-o", "name").stdout.split()
    assert "resourceslicepatches.resource.k8s.io" in short
    assert "resourcepoolstatusrequests.resource.k8s.io" in short


def test_show_managed_fields(server: ServerProcess) -> None:
    """`kubectl get rsp NAME -o yaml --show-managed-fields` shows the create's Update entry;
    without the flag kubectl hides managedFields."""
    name = unique("mf")
    _create(server, name)
    shown = yaml.safe_load(
        server.kubectl("get", "rsp", name, "-o", "yaml", "--show-managed-fields").stdout
    )
    [entry] = shown["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl-create"
    assert entry["operation"] == "Update"
    assert entry["apiVersion"] == "resource.k8s.io/v1alpha3"
    assert entry["fieldsV1"] == {"f:spec": {"f:devices": {"f:priority": {}}}}
    hidden = yaml.safe_load(server.kubectl("get", "rsp", name, "-o", "yaml").stdout)
    assert "managedFields" not in hidden["metadata"]


def test_delete_waits_for_finalizers(server: ServerProcess) -> None:
    """`kubectl delete` marks an object with a finalizer for deletion and waits until the
    finalizer is removed and the object is gone."""
    name = unique("fin")
    body = rsp(name)
    body["metadata"]["finalizers"] = ["example.com/hold"]
    server.kubectl("create", "-f", "-", input=json.dumps(body))
    delete = kubectl_popen(server, "delete", "rsp", name, "--timeout=60s")
    try:
        assert delete.stdout is not None
        out = LineReader(delete.stdout)
        out.wait_for(lambda line: line == f'resourceslicepatch.resource.k8s.io "{name}" deleted')
        marked = _get(server, name)
        assert marked["metadata"]["deletionTimestamp"]
        assert delete.poll() is None, "kubectl delete returned while the object still exists"
        server.kubectl(
            "patch",
            "rsp",
            name,
            "--type=json",
            "-p",
            '[{"op":"remove","path":"/metadata/finalizers"}]',
        )
        assert delete.wait(timeout=60) == 0
    finally:
        stop(delete)
    assert _absent(server, name)


def test_status_subresource(server: ServerProcess) -> None:
    """`kubectl patch --subresource=status` changes only the status (spec and generation stay);
    a patch of the main resource that includes status changes the spec but not the status."""
    name = unique("status")
    before = _create(server, name, priority=1)
    server.kubectl(
        "patch",
        "rsp",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(
            {
                "spec": {"devices": {"priority": 50}},
                "status": {"matchedDevices": 3, "observedGeneration": 1},
            }
        ),
    )
    after_status = _get(server, name)
    assert after_status["status"] == {"matchedDevices": 3, "observedGeneration": 1}
    assert after_status["spec"] == before["spec"]
    assert after_status["metadata"]["generation"] == 1
    shown = json.loads(
        server.kubectl("get", "rsp", name, "--subresource=status", "-o", "json").stdout
    )
    assert shown["status"] == {"matchedDevices": 3, "observedGeneration": 1}

    server.kubectl(
        "patch",
        "rsp",
        name,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"devices": {"priority": 2}}, "status": {"matchedDevices": 99}}),
    )
    after_main = _get(server, name)
    assert after_main["spec"]["devices"]["priority"] == 2
    assert after_main["metadata"]["generation"] == 2
    assert after_main["status"] == {"matchedDevices": 3, "observedGeneration": 1}

    wide = server.kubectl("get", "rsp", name, "-o", "wide").stdout.splitlines()
    assert wide[0].split() == [
        "NAME",
        "DRIVER",
        "POOL",
        "DEVICE",
        "PRIORITY",
        "CLASS",
        "MATCHED",
        "AGE",
    ]
    assert wide[1].split()[:3] == [name, "2", "3"]

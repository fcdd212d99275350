"""The core DRA kinds in standalone mode with the real kubectl: DeviceClass, ResourceClaim (with a
KEP-5254 ``cel`` constraint and the KEP-5007 device status) and ResourceClaimTemplate.

The scheduler and the attaching controller are played by the test: they write the claim status
through the status subresource with ``kubectl patch --subresource=status``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .harness import ServerProcess
from .objects import unique

NAMESPACE = "default"
CONNECTED = (
    "size(devices) == 4 && "
    "devices.map(d, d.attributes['mla.example.com'].deviceid).max() - "
    "devices.map(d, d.attributes['mla.example.com'].deviceid).min() == 3"
)


def _class_manifest(name: str) -> str:
    return f"""apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: {name}
spec:
  selectors:
  - cel:
      expression: device.driver == "mla.example.com"
  config:
  - opaque:
      driver: mla.example.com
      parameters:
        apiVersion: mla.example.com/v1
        kind: Config
        sharing: exclusive
"""


def _claim_manifest(name: str, class_name: str, expression: str = CONNECTED) -> str:
    return f"""apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: {name}
  namespace: {NAMESPACE}
spec:
  devices:
    requests:
    - name: mla-request
      exactly:
        deviceClassName: {class_name}
        count: 4
    constraints:
    - requests: ["mla-request"]
      cel:
        expression: {json.dumps(expression)}
"""


def _template_manifest(name: str, class_name: str) -> str:
    return f"""apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: {name}
  namespace: {NAMESPACE}
spec:
  metadata:
    labels:
      app: mla
  spec:
    devices:
      requests:
      - name: mla-request
        exactly:
          deviceClassName: {class_name}
          count: 4
      constraints:
      - requests: ["mla-request"]
        cel:
          expression: {json.dumps(CONNECTED)}
"""


def _get(server: ServerProcess, resource: str, name: str) -> dict[str, Any]:
    out = server.kubectl("get", resource, name, "-n", NAMESPACE, "-o", "json").stdout
    got: dict[str, Any] = json.loads(out)
    return got


def _rows(output: str) -> dict[str, list[str]]:
    """``kubectl get`` output keyed by the NAME column (the second with ``-A``)."""
    lines = output.strip().splitlines()
    header = lines[0].split()
    key = header.index("NAME")
    return {line.split()[key]: line.split() for line in lines[1:]}


def _create_claim(server: ServerProcess, name: str, class_name: str = "mla.example.com") -> None:
    server.kubectl("apply", "-f", "-", input=_claim_manifest(name, class_name))


def _patch_status(
    server: ServerProcess, name: str, status: dict[str, Any], check: bool = True
) -> Any:
    return server.kubectl(
        "patch",
        "resourceclaim",
        name,
        "-n",
        NAMESPACE,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
        check=check,
    )


def _result(device: str) -> dict[str, Any]:
    return {
        "request": "mla-request",
        "driver": "mla.example.com",
        "pool": "fabric-pool",
        "device": device,
        "bindingConditions": ["kubernetes.io/is-attached"],
        "bindingFailureConditions": ["kubernetes.io/attach-failed"],
    }


ALLOCATION = {
    "devices": {"results": [_result(f"mla-{i}") for i in range(4)]},
    "allocationTimestamp": "2026-01-01T00:00:00Z",
}
NEEDS_ATTACHING = {
    "driver": "mla.example.com",
    "pool": "fabric-pool",
    "device": "mla-0",
    "nodeName": "node-1",
    "conditions": [
        {
            "type": "kubernetes.io/needs-attaching",
            "status": "True",
            "reason": "AttachRequested",
            "message": "waiting for the fabric to attach mla-0 to node-1",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ],
}


def test_apply_class_claim_and_template_then_get_them(
    server: ServerProcess, tmp_path: Path
) -> None:
    """`kubectl apply` of a class, a claim with a cel constraint and a template; `kubectl get`
    lists them with upstream's columns, the claim defaulted and its expression kept."""
    class_name = unique("mla") + ".example.com"
    claim, template = unique("claim"), unique("template")
    manifest = tmp_path / "dra.yaml"
    manifest.write_text(
        "---\n".join(
            [
                _class_manifest(class_name),
                _claim_manifest(claim, class_name),
                _template_manifest(template, class_name),
            ]
        )
    )
    out = server.kubectl("apply", "-f", str(manifest)).stdout.splitlines()
    assert out == [
        f"deviceclass.resource.k8s.io/{class_name} created",
        f"resourceclaim.resource.k8s.io/{claim} created",
        f"resourceclaimtemplate.resource.k8s.io/{template} created",
    ]

    classes = server.kubectl("get", "deviceclasses").stdout
    assert classes.splitlines()[0].split() == ["NAME", "AGE"]
    assert class_name in _rows(classes)

    claims = server.kubectl("get", "resourceclaims", "-A").stdout
    assert claims.splitlines()[0].split() == ["NAMESPACE", "NAME", "STATE", "AGE"]
    assert _rows(claims)[claim][:3] == [NAMESPACE, claim, "pending"]

    templates = server.kubectl("get", "resourceclaimtemplates", "-n", NAMESPACE).stdout
    assert templates.splitlines()[0].split() == ["NAME", "AGE"]
    assert template in _rows(templates)

    stored = _get(server, "resourceclaim", claim)
    request = stored["spec"]["devices"]["requests"][0]["exactly"]
    assert request == {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": 4}
    assert stored["spec"]["devices"]["constraints"][0]["cel"] == {"expression": CONNECTED}
    got_template = _get(server, "resourceclaimtemplate", template)
    assert got_template["spec"]["metadata"] == {"labels": {"app": "mla"}}
    assert got_template["spec"]["spec"]["devices"]["constraints"][0]["cel"] == {
        "expression": CONNECTED
    }
    got_class = json.loads(server.kubectl("get", "deviceclass", class_name, "-o", "json").stdout)
    assert got_class["spec"]["config"][0]["opaque"]["parameters"]["sharing"] == "exclusive"


def test_claim_with_a_faulty_cel_constraint_is_rejected(server: ServerProcess) -> None:
    """A syntax error is a 422 naming constraints[0].cel.expression with the CEL message."""
    name = unique("badcel")
    result = server.kubectl(
        "apply",
        "-f",
        "-",
        input=_claim_manifest(name, "mla.example.com", "size(devices) == "),
        check=False,
    )
    assert result.returncode != 0
    assert "spec.devices.constraints[0].cel.expression" in result.stderr
    assert "compilation failed" in result.stderr
    assert "Syntax error" in result.stderr
    missing = server.kubectl("get", "resourceclaim", name, "-n", NAMESPACE, check=False)
    assert missing.returncode != 0
    assert "NotFound" in missing.stderr


def test_allocation_and_kep5007_device_status_through_the_status_subresource(
    server: ServerProcess,
) -> None:
    """The scheduler writes the allocation (with binding conditions) and the fabric device's
    nodeName and needs-attaching condition; they read back, and STATE follows."""
    name = unique("fabric")
    _create_claim(server, name)
    before = _get(server, "resourceclaim", name)
    # The consumer exists: the claim controller prunes reservedFor entries of pods that do not.
    pod = unique("pod")
    server.kubectl(
        "create",
        "-f",
        "-",
        input=yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod, "namespace": NAMESPACE},
                "spec": {
                    "containers": [{"name": "main", "image": "busybox"}],
                    "resourceClaims": [{"name": "dev", "resourceClaimName": name}],
                },
            }
        ),
    )
    uid = _get(server, "pod", pod)["metadata"]["uid"]
    out = _patch_status(
        server,
        name,
        {
            "allocation": ALLOCATION,
            "devices": [NEEDS_ATTACHING],
            "reservedFor": [{"resource": "pods", "name": pod, "uid": uid}],
        },
    ).stdout
    assert out.strip() == f"resourceclaim.resource.k8s.io/{name} patched"
    got = _get(server, "resourceclaim", name)
    assert got["status"]["allocation"] == ALLOCATION
    assert got["status"]["devices"] == [NEEDS_ATTACHING]
    assert got["spec"] == before["spec"]
    assert got["metadata"]["generation"] == before["metadata"]["generation"]
    row = _rows(server.kubectl("get", "resourceclaims", "-A").stdout)[name]
    assert row[2] == "allocated,reserved"
    allocated = server.kubectl(
        "get", "resourceclaims", "-A", "--field-selector", "status.allocated=true", "-o", "name"
    ).stdout.split()
    assert f"resourceclaim.resource.k8s.io/{name}" in allocated

    # The attaching controller flips the conditions.
    attached = {
        **NEEDS_ATTACHING,
        "conditions": [
            {**NEEDS_ATTACHING["conditions"][0], "status": "False", "reason": "Attached"},
            {
                "type": "kubernetes.io/is-attached",
                "status": "True",
                "reason": "Attached",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:05Z",
            },
        ],
    }
    _patch_status(server, name, {"devices": [attached]})
    conditions = _get(server, "resourceclaim", name)["status"]["devices"][0]["conditions"]
    assert [(c["type"], c["status"]) for c in conditions] == [
        ("kubernetes.io/needs-attaching", "False"),
        ("kubernetes.io/is-attached", "True"),
    ]


def test_status_of_a_device_that_is_not_allocated_is_rejected(server: ServerProcess) -> None:
    name = unique("notalloc")
    _create_claim(server, name)
    _patch_status(server, name, {"allocation": ALLOCATION})
    stray = {**NEEDS_ATTACHING, "device": "mla-9"}
    result = _patch_status(server, name, {"devices": [stray]}, check=False)
    assert result.returncode != 0
    assert "status.devices[0]" in result.stderr
    assert "must be an allocated device in the claim" in result.stderr
    assert "devices" not in _get(server, "resourceclaim", name)["status"]


def test_allocation_cannot_be_replaced_but_can_be_removed(server: ServerProcess) -> None:
    name = unique("realloc")
    _create_claim(server, name)
    _patch_status(server, name, {"allocation": ALLOCATION})
    other = {"devices": {"results": [_result(f"mla-{i}") for i in range(4, 8)]}}
    replaced = _patch_status(server, name, {"allocation": other}, check=False)
    assert replaced.returncode != 0
    assert "status.allocation: Invalid value" in replaced.stderr
    assert "field is immutable" in replaced.stderr
    _patch_status(server, name, {"allocation": None})
    assert "allocation" not in _get(server, "resourceclaim", name).get("status", {})
    assert _rows(server.kubectl("get", "resourceclaims", "-A").stdout)[name][2] == "pending"


def test_claim_spec_is_immutable(server: ServerProcess, tmp_path: Path) -> None:
    """A spec change is a 422 "field is immutable"; re-applying the same manifest server-side
    (without the defaults the server filled in) is not a change."""
    name = unique("immutable")
    manifest = tmp_path / "claim.yaml"
    manifest.write_text(_claim_manifest(name, "mla.example.com"))
    server.kubectl("apply", "--server-side", "-f", str(manifest))
    before = _get(server, "resourceclaim", name)
    changed = server.kubectl(
        "patch",
        "resourceclaim",
        name,
        "-n",
        NAMESPACE,
        "--type=merge",
        "-p",
        '{"spec":{"devices":{"requests":[{"name":"mla-request","exactly":'
        '{"deviceClassName":"mla.example.com","count":8}}]}}}',
        check=False,
    )
    assert changed.returncode != 0
    assert "spec: Invalid value" in changed.stderr
    assert "field is immutable" in changed.stderr
    again = server.kubectl("apply", "--server-side", "-f", str(manifest)).stdout
    assert again.strip() == f"resourceclaim.resource.k8s.io/{name} serverside-applied"
    after = _get(server, "resourceclaim", name)
    assert after["spec"] == before["spec"]
    assert after["metadata"]["generation"] == 1
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_deleted_claim_state(server: ServerProcess) -> None:
    """A claim held by a finalizer shows STATE "deleted" once its deletion is requested."""
    name = unique("deleted")
    _create_claim(server, name)
    server.kubectl(
        "patch",
        "resourceclaim",
        name,
        "-n",
        NAMESPACE,
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":["resource.kubernetes.io/delete-protection"]}}',
    )
    server.kubectl("delete", "resourceclaim", name, "-n", NAMESPACE, "--wait=false")
    assert _rows(server.kubectl("get", "resourceclaims", "-A").stdout)[name][2] == "deleted"
    server.kubectl(
        "patch",
        "resourceclaim",
        name,
        "-n",
        NAMESPACE,
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
    )
    gone = server.kubectl("get", "resourceclaim", name, "-n", NAMESPACE, check=False)
    assert gone.returncode != 0
    assert "NotFound" in gone.stderr


def test_explain_cel_constraint(server: ServerProcess) -> None:
    """`kubectl explain resourceclaim.spec.devices.constraints.cel` documents the KEP-5254 field."""
    out = server.kubectl("explain", "resourceclaim.spec.devices.constraints.cel").stdout
    assert "KIND:       ResourceClaim" in out
    assert "VERSION:    v1" in out
    assert "FIELD: cel <CELDeviceConstraint>" in out
    assert "expression\t<string> -required-" in out
    assert "named `devices`" in out
    status = server.kubectl("explain", "resourceclaim.status.devices.nodeName").stdout
    assert "kubernetes.io/needs-attaching" in status


def test_client_side_apply_twice_uses_strategic_merge(server: ServerProcess) -> None:
    """kubectl knows the v1 DRA kinds and patches them with strategic merge patches: a second
    `kubectl apply` of a changed class is "configured", and the change is stored."""
    name = unique("class")
    server.kubectl("apply", "-f", "-", input=_class_manifest(name))
    changed = _class_manifest(name).replace('"mla.example.com"', '"other.example.com"', 1)
    result = server.kubectl("apply", "-f", "-", input=changed, check=False)
    assert result.returncode == 0, result.stderr
    assert "configured" in result.stdout
    expression = server.kubectl(
        "get", "deviceclass", name, "-o", "jsonpath={.spec.selectors[0].cel.expression}"
    ).stdout
    assert expression == 'device.driver == "other.example.com"'
    again = server.kubectl("apply", "-f", "-", input=changed)
    assert "unchanged" in again.stdout

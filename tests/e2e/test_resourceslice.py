"""The real kubectl against ResourceSlices with KEP-5234 mixins: apply, get columns, explain,
rejected slices (422 naming the field, nothing stored) and field selectors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import yaml

from .harness import ServerProcess
from .objects import is_status, unique

SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def resource_slice(name: str, driver: str, **spec: Any) -> dict[str, Any]:
    """A node-local slice of four GPUs sharing one device mixin and one counter set mixin."""
    body: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": f"{name}-pool", "generation": 1, "resourceSliceCount": 1},
        "nodeName": f"{name}-node",
        "sharedCounters": [
            {"name": f"gpu-{i}-counters", "includes": ["gpu-memory"]} for i in range(4)
        ],
        "devices": [
            {
                "name": f"gpu-{i}",
                "includes": ["a100"],
                "attributes": {"index": {"int": i}},
                "consumesCounters": [{"counterSet": f"gpu-{i}-counters", "includes": ["whole"]}],
            }
            for i in range(4)
        ],
        "mixins": {
            "device": [
                {
                    "name": "a100",
                    "attributes": {
                        "model": {"string": "a100"},
                        "driverVersion": {"version": "1.2.3"},
                    },
                    "capacity": {"memory": {"value": "80Gi"}},
                }
            ],
            "counterSet": [{"name": "gpu-memory", "counters": {"memory": {"value": "80Gi"}}}],
            "deviceCounterConsumption": [
                {"name": "whole", "counters": {"memory": {"value": "80Gi"}}}
            ],
        },
    }
    body.update(spec)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": body,
    }


def _get(server: ServerProcess, name: str) -> dict[str, Any]:
    out = server.kubectl("get", "resourceslice", name, "-o", "json", "--show-managed-fields").stdout
    return dict(orjson.loads(out))


def test_apply_a_slice_with_mixins(server: ServerProcess, tmp_path: Path) -> None:
    """`kubectl apply` stores the slice as written (mixins and includes kept); applying a
    changed manifest updates a mixin and bumps the generation; what the manifest drops is
    removed."""
    name = unique("mixed")
    driver = f"{name}.example.com"
    manifest = tmp_path / "slice.yaml"
    manifest.write_text(yaml.safe_dump(resource_slice(name, driver)))
    out = server.kubectl("apply", "-f", str(manifest)).stdout
    assert out.strip() == f"resourceslice.resource.k8s.io/{name} created"
    stored = _get(server, name)
    assert stored["spec"]["mixins"]["device"][0]["name"] == "a100"
    assert [d["includes"] for d in stored["spec"]["devices"]] == [["a100"]] * 4
    assert stored["metadata"]["generation"] == 1

    changed = resource_slice(name, driver)
    changed["spec"]["mixins"]["device"][0]["attributes"]["model"] = {"string": "h100"}
    manifest.write_text(yaml.safe_dump(changed))
    out = server.kubectl("apply", "-f", str(manifest))
    assert out.stdout.strip() == f"resourceslice.resource.k8s.io/{name} configured"
    stored = _get(server, name)
    assert stored["spec"]["mixins"]["device"][0]["attributes"]["model"] == {"string": "h100"}
    assert stored["metadata"]["generation"] == 2

    del changed["spec"]["mixins"]["device"][0]["attributes"]["driverVersion"]
    del changed["spec"]["devices"][0]["includes"]
    manifest.write_text(yaml.safe_dump(changed))
    server.kubectl("apply", "-f", str(manifest))
    stored = _get(server, name)
    assert "driverVersion" not in stored["spec"]["mixins"]["device"][0]["attributes"]
    assert "includes" not in stored["spec"]["devices"][0]
    assert stored["spec"]["devices"][1]["includes"] == ["a100"]


def test_server_side_apply_creates_a_slice_with_mixins(
    server: ServerProcess, tmp_path: Path
) -> None:
    """`kubectl apply --server-side` of a new slice creates it; re-applying is a no-op."""
    name = unique("ssa")
    manifest = tmp_path / "slice.yaml"
    manifest.write_text(yaml.safe_dump(resource_slice(name, f"{name}.example.com")))
    server.kubectl("apply", "--server-side", "-f", str(manifest))
    first = _get(server, name)
    server.kubectl("apply", "--server-side", "-f", str(manifest))
    again = _get(server, name)
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert [m["manager"] for m in again["metadata"]["managedFields"]] == ["kubectl"]


def test_get_prints_name_node_driver_pool_age(server: ServerProcess) -> None:
    """`kubectl get resourceslices` prints the columns upstream kubectl prints."""
    name = unique("cols")
    driver = f"{name}.example.com"
    server.kubectl("create", "-f", "-", input=orjson.dumps(resource_slice(name, driver)).decode())
    out = server.kubectl("get", "resourceslices").stdout
    assert out.splitlines()[0].split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    row = next(line for line in out.splitlines() if line.startswith(name + " "))
    assert row.split()[:4] == [name, f"{name}-node", driver, f"{name}-pool"]


def test_explain_shows_the_mixins(server: ServerProcess) -> None:
    """`kubectl explain resourceslice.spec.mixins` lists the three kinds of mixin with their
    descriptions, from the OpenAPI v3 document of resource.k8s.io/v1."""
    out = server.kubectl("explain", "resourceslice.spec.mixins").stdout
    assert "KIND:       ResourceSlice" in out
    assert "VERSION:    v1" in out
    assert "FIELD: mixins <ResourceSliceMixins>" in out
    for field in ("counterSet", "device", "deviceCounterConsumption"):
        assert f"\n  {field}\t<[]" in out, field
    assert "collection of shared attributes and capacities" in " ".join(out.split())
    includes = server.kubectl("explain", "resourceslice.spec.devices.includes").stdout
    assert "the last mixin listed wins" in " ".join(includes.split())


def _rejected(server: ServerProcess, body: dict[str, Any]) -> dict[str, Any]:
    """POST ``body``; it must be refused with a 422 Status, whose body is returned."""
    with server.client() as client:
        response = client.post(SLICES, content=orjson.dumps(body))
        assert response.status_code == 422, response.text
        status = response.json()
        assert is_status(status, 422)
        assert status["reason"] == "Invalid"
        gone = client.get(f"{SLICES}/{body['metadata']['name']}")
        assert gone.status_code == 404, "a rejected slice must not be stored"
    return dict(status)


def test_a_dangling_include_is_rejected(server: ServerProcess) -> None:
    """An include naming no mixin of the slice: 422 naming the include, nothing stored; kubectl
    shows the same field."""
    name = unique("dangling")
    body = resource_slice(name, f"{name}.example.com")
    body["spec"]["devices"][3]["includes"] = ["a200"]
    status = _rejected(server, body)
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.devices[3].includes[0]"]
    assert status["details"]["causes"][0]["reason"] == "FieldValueNotFound"
    result = server.kubectl("create", "-f", "-", input=orjson.dumps(body).decode(), check=False)
    assert result.returncode != 0
    assert 'spec.devices[3].includes[0]: Not found: "a200"' in result.stderr


def test_a_slice_over_a_limit_is_rejected(server: ServerProcess) -> None:
    """129 devices: 422 naming spec.devices, nothing stored; 128 are accepted."""
    name = unique("big")
    body = resource_slice(name, f"{name}.example.com")
    del body["spec"]["sharedCounters"], body["spec"]["mixins"]["counterSet"]
    body["spec"]["devices"] = [{"name": f"gpu-{i}", "includes": ["a100"]} for i in range(129)]
    status = _rejected(server, body)
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueTooMany",
            "field": "spec.devices",
            "message": "Too many: must have at most 128 items (has 129)",
        }
    ]
    body["spec"]["devices"].pop()
    with server.client() as client:
        assert client.post(SLICES, content=orjson.dumps(body)).status_code == 201


def test_field_selectors(server: ServerProcess) -> None:
    """spec.driver, spec.nodeName and spec.pool.name select slices, as upstream."""
    a, b, c = unique("fs-a"), unique("fs-b"), unique("fs-c")
    driver = f"{a}.example.com"
    for name, drv in ((a, driver), (b, driver), (c, f"{c}.example.com")):
        server.kubectl("create", "-f", "-", input=orjson.dumps(resource_slice(name, drv)).decode())

    def names(selector: str) -> list[str]:
        out = server.kubectl("get", "resourceslices", "--field-selector", selector, "-o", "name")
        return sorted(line.split("/", 1)[1] for line in out.stdout.split())

    assert names(f"spec.driver={driver}") == sorted([a, b])
    assert names(f"spec.nodeName={b}-node") == [b]
    assert names(f"spec.pool.name={c}-pool") == [c]
    assert a not in names(f"spec.driver!={driver}")

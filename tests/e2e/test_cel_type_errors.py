"""A selector whose operators do not fit the device fields' types (``device.driver + 1``) is
refused at create with kubectl, for a DeviceClass, a ResourceClaim request and a
ResourceSlicePatch: 422 naming the field, and nothing is stored."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from .harness import ServerProcess
from .objects import rsp, unique

BAD = "device.driver + 1 == 2"
GOOD = "device.driver + '.x' == 'gpu.example.com.x'"


def device_class(name: str, expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def resource_claim(name: str, expression: str) -> dict[str, Any]:
    request = {
        "deviceClassName": "gpu.example.com",
        "selectors": [{"cel": {"expression": expression}}],
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}},
    }


def slice_patch(name: str, expression: str) -> dict[str, Any]:
    return rsp(name, filter={"selectors": [{"cel": {"expression": expression}}]})


CASES = [
    ("deviceclass", device_class, "spec.selectors[0].cel.expression", []),
    (
        "resourceclaim",
        resource_claim,
        "spec.devices.requests[0].exactly.selectors[0].cel.expression",
        ["-n", "default"],
    ),
    ("resourceslicepatch", slice_patch, "spec.devices.filter.selectors[0].cel.expression", []),
]


@pytest.mark.parametrize(("resource", "build", "field", "scope"), CASES)
def test_type_error_in_a_selector_is_refused_at_create(
    server: ServerProcess, resource: str, build: Any, field: str, scope: list[str]
) -> None:
    name = unique("cel-type")
    refused = server.kubectl(
        "create", "-f", "-", input=yaml.safe_dump(build(name, BAD)), check=False
    )
    assert refused.returncode != 0
    assert "is invalid" in refused.stderr, refused.stderr
    assert field in refused.stderr, refused.stderr
    assert "_+_" in refused.stderr, refused.stderr
    missing = server.kubectl("get", resource, name, *scope, check=False)
    assert missing.returncode != 0
    assert "NotFound" in missing.stderr, missing.stderr

    # The same object with a well-typed selector is stored.
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(build(name, GOOD)))
    stored = yaml.safe_load(server.kubectl("get", resource, name, *scope, "-o", "yaml").stdout)
    assert GOOD in yaml.safe_dump(stored["spec"])
    server.kubectl("delete", resource, name, *scope)

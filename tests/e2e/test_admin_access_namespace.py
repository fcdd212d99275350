"""Admin access in standalone mode, driven by kubectl: a ResourceClaim or ResourceClaimTemplate
asking for ``adminAccess`` is refused in a namespace without the
``resource.kubernetes.io/admin-access: "true"`` label, naming the field, and nothing is
stored; once the namespace carries the label the same objects are created."""

from __future__ import annotations

from typing import Any

import yaml

from .harness import ServerProcess
from .objects import unique

LABEL = "resource.kubernetes.io/admin-access"


def _claim_spec() -> dict[str, Any]:
    request = {
        "name": "gpu",
        "exactly": {"deviceClassName": "gpu.example.com", "adminAccess": True},
    }
    return {"devices": {"requests": [request]}}


def _claim(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "monitor", "namespace": namespace},
        "spec": _claim_spec(),
    }


def _template(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "monitor", "namespace": namespace},
        "spec": {"spec": _claim_spec()},
    }


def test_admin_access_needs_the_namespace_label(server: ServerProcess) -> None:
    ns = unique("admin")
    server.kubectl("create", "ns", ns)
    for obj, field in (
        (_claim(ns), "spec.devices.requests[0].exactly.adminAccess"),
        (_template(ns), "spec.spec.devices.requests[0].exactly.adminAccess"),
    ):
        refused = server.kubectl("create", "-f", "-", input=yaml.safe_dump(obj), check=False)
        assert refused.returncode != 0
        assert field in refused.stderr
        assert LABEL in refused.stderr
    for plural in ("resourceclaims", "resourceclaimtemplates"):
        assert server.kubectl("get", plural, "-n", ns, "-o", "name").stdout.split() == []

    server.kubectl("label", "ns", ns, f"{LABEL}=false")
    wrong = server.kubectl("create", "-f", "-", input=yaml.safe_dump(_claim(ns)), check=False)
    assert wrong.returncode != 0
    assert "spec.devices.requests[0].exactly.adminAccess" in wrong.stderr

    server.kubectl("label", "ns", ns, "--overwrite", f"{LABEL}=true")
    for obj in (_claim(ns), _template(ns)):
        server.kubectl("create", "-f", "-", input=yaml.safe_dump(obj))
    assert server.kubectl("get", "resourceclaims", "-n", ns, "-o", "name").stdout.split() == [
        "resourceclaim.resource.k8s.io/monitor"
    ]
    assert server.kubectl(
        "get", "resourceclaimtemplates", "-n", ns, "-o", "name"
    ).stdout.split() == ["resourceclaimtemplate.resource.k8s.io/monitor"]

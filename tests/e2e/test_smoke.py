"""The server starts, answers health and discovery, and kubectl sees both kinds."""

from __future__ import annotations

from .harness import ServerProcess


def test_readyz_and_api_resources(server: ServerProcess) -> None:
    with server.client() as client:
        assert client.get("/readyz").text == "ok"
    out = server.kubectl("api-resources", "--api-group=resource.k8s.io").stdout
    lines = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert lines["resourceslicepatches"][1] == "rsp"
    assert lines["resourcepoolstatusrequests"][1] == "rpsr"

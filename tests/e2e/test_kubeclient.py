"""The client layer against the real server over HTTPS: who a kubeconfig's credentials make
us (a client certificate from files or inline data, a token file), typed Status errors,
and a paged list equal to the unpaged one."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.kubeclient import Conflict, KubeClient, NotFound, load_kubeconfig
from apiserver.server.certs import ensure_serving_certs

from .harness import ServerProcess, start_server
from .objects import unique
from .test_auth_client_cert import _mint
from .test_kube_source import SLICES, slice_obj

WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("kubeclient")
    ensure_serving_certs(workdir / "certs")  # its CA is the client CA too
    proc = start_server(workdir, ["--client-ca-file", str(workdir / "certs" / "ca.crt")])
    yield proc
    proc.stop()


def _kubeconfig(server: ServerProcess, path: Path, user: dict[str, Any]) -> Path:
    """The server's kubeconfig with ``user`` in place of the admin token."""
    config = yaml.safe_load(server.kubeconfig.read_text())
    config["users"] = [{"name": "u", "user": user}]
    config["contexts"][0]["context"]["user"] = "u"
    path.write_text(yaml.safe_dump(config))
    return path


async def _whoami(path: Path) -> dict[str, Any]:
    async with KubeClient(load_kubeconfig(path)) as client:
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        answer = await client.create(WHOAMI, review)
    return dict(answer["status"]["userInfo"])


@pytest.mark.parametrize("inline", [False, True], ids=["files", "data"])
async def test_a_client_certificate_is_who_the_server_sees(
    server: ServerProcess, tmp_path: Path, inline: bool
) -> None:
    name = unique("cert-user")
    cert, key = _mint(server.cert_dir, name, ["team-a"], tmp_path / name)
    if inline:
        user = {
            "client-certificate-data": base64.b64encode(cert.read_bytes()).decode(),
            "client-key-data": base64.b64encode(key.read_bytes()).decode(),
        }
    else:  # relative to the kubeconfig, as kubectl reads them
        user = {"client-certificate": cert.name, "client-key": key.name}
    who = await _whoami(_kubeconfig(server, tmp_path / "kubeconfig", user))
    assert who["username"] == name
    assert "team-a" in who["groups"]


async def test_a_token_file_is_who_the_server_sees(server: ServerProcess, tmp_path: Path) -> None:
    admin = yaml.safe_load(server.kubeconfig.read_text())["users"][0]["user"]["token"]
    (tmp_path / "token").write_text(admin + "\n")
    who = await _whoami(_kubeconfig(server, tmp_path / "kubeconfig", {"tokenFile": "token"}))
    assert "system:masters" in who["groups"]


async def test_status_errors_are_typed_and_a_paged_list_is_the_whole_list(
    server: ServerProcess,
) -> None:
    driver = f"{unique('kc')}.example.com"
    async with KubeClient(load_kubeconfig(server.kubeconfig)) as client:
        for i in range(7):
            await client.create(SLICES, slice_obj(f"{driver}-{i}", driver, f"n{i}"))
        with pytest.raises(Conflict) as conflict:
            await client.create(SLICES, slice_obj(f"{driver}-0", driver, "n0"))
        assert conflict.value.reason == "AlreadyExists"
        with pytest.raises(NotFound):
            await client.get(f"{SLICES}/{driver}-missing")
        selector = {"fieldSelector": f"spec.driver={driver}"}
        paged = await client.list(SLICES, selector, page_size=2)
        whole = await client.get(SLICES, **selector)
    assert [o["metadata"]["name"] for o in paged.items] == [
        o["metadata"]["name"] for o in whole["items"]
    ]
    assert len(paged.items) == 7
    assert int(paged.resource_version) > 0

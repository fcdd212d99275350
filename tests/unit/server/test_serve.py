"""Preparing the server from its options: the token file and the admin kubeconfig."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from apiserver.auth.delegation import AuthOptions
from apiserver.server.rbac import RBACService
from apiserver.server.serve import ServeOptions, prepare
from apiserver.server.serving import ServingOptions
from apiserver.storage.options import StorageOptions


def options(tmp_path: Path, tokens: Path) -> ServeOptions:
    return ServeOptions(
        storage=StorageOptions(storage=f"sqlite:///{tmp_path / 'data' / 'store.db'}"),
        serving=ServingOptions(
            cert_dir=str(tmp_path / "certs"), kubeconfig_out=str(tmp_path / "kubeconfig")
        ),
        auth=AuthOptions(token_auth_file=str(tokens)),
    )


def kubeconfig_token(tmp_path: Path) -> str:
    config = yaml.safe_load((tmp_path / "kubeconfig").read_text())
    [user] = config["users"]
    token: str = user["user"]["token"]
    return token


def test_the_kubeconfig_carries_the_admin_token_of_an_existing_token_file(
    tmp_path: Path,
) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(
        "# token,user,uid,groups\n"
        "ops-token,ops,ops\n"
        'admin-token,root,root,"ops,system:masters"\n'
        'later-token,other,other,"system:masters"\n'
    )
    prepare(options(tmp_path, tokens))
    assert kubeconfig_token(tmp_path) == "admin-token"


def test_a_token_file_without_an_admin_cannot_make_a_kubeconfig(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("ops-token,ops,ops\n")
    with pytest.raises(ValueError, match="system:masters"):
        prepare(options(tmp_path, tokens))


def test_a_generated_token_file_gives_its_token_to_the_kubeconfig(tmp_path: Path) -> None:
    tokens = tmp_path / "certs" / "tokens.csv"
    prepare(options(tmp_path, tokens))
    assert kubeconfig_token(tmp_path) == tokens.read_text().split(",", 1)[0]


@pytest.mark.parametrize(("mode", "rbac"), [("RBAC", True), ("AlwaysAllow", False)])
def test_authorization_mode_chooses_whether_rbac_runs(
    tmp_path: Path, mode: str, rbac: bool
) -> None:
    tokens = tmp_path / "certs" / "tokens.csv"
    _, server = prepare(
        ServeOptions(
            storage=StorageOptions(storage=f"sqlite:///{tmp_path / 'data' / 'store.db'}"),
            serving=ServingOptions(cert_dir=str(tmp_path / "certs")),
            auth=AuthOptions(token_auth_file=str(tokens), authorization_mode=mode),
        )
    )
    assert any(isinstance(s, RBACService) for s in server.services) is rbac

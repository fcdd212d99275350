"""Generated secrets are written readable by their owner only, also over an existing file."""

from __future__ import annotations

import stat
from pathlib import Path

from apiserver.auth.tokenfile import TokenAuthenticator, generate_token_file
from apiserver.server.certs import ensure_serving_certs
from apiserver.server.kubeconfig import write_kubeconfig


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_token_file_is_private_even_if_it_existed_world_readable(tmp_path: Path) -> None:
    target = tmp_path / "tokens.csv"
    target.write_text("old\n")
    target.chmod(0o644)
    token = generate_token_file(target)
    assert mode(target) == 0o600
    user = TokenAuthenticator.from_file(target).user_for(f"Bearer {token}")
    assert user is not None
    assert user.name == "admin"


def test_keys_and_kubeconfig_are_private(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    certs.mkdir()
    (certs / "apiserver.key").write_text("")
    (certs / "apiserver.key").chmod(0o666)
    files = ensure_serving_certs(certs)
    assert mode(files.key) == 0o600
    assert mode(certs / "ca.key") == 0o600
    assert mode(files.cert) == 0o644
    config = tmp_path / "kubeconfig"
    config.write_text("")
    config.chmod(0o644)
    write_kubeconfig(config, "https://127.0.0.1:6443", files.ca_cert, "t")
    assert mode(config) == 0o600

"""The access log (``--access-log``): one JSON line per request naming who asked — the user
as authenticated, whom it impersonated — with the verb, resource, namespace, name, response
code and latency, read from the log of a real server driven by the real kubectl."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from .access_log import Entry, access_entries, wait_for_entry
from .harness import ServerProcess, start_server


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, str]]:
    workdir = tmp_path_factory.mktemp("access-log")
    admin, carol = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    token_file = workdir / "tokens.csv"
    token_file.write_text(
        f'{admin},admin,admin-uid,"system:masters"\n{carol},carol,carol-uid,"team-c"\n'
    )
    proc = start_server(workdir, ["--token-auth-file", str(token_file), "--access-log"])
    yield proc, carol
    proc.stop()


def _is(entry: Entry, **fields: object) -> bool:
    return all(entry.get(k) == v for k, v in fields.items())


def test_a_kubectl_list_is_logged_naming_the_user(logged: tuple[ServerProcess, str]) -> None:
    server, _ = logged
    server.kubectl("get", "resourceslices", "--selector", "app=access-log-list")
    entry = wait_for_entry(
        server,
        lambda e: (
            _is(e, resource="resourceslices", verb="list") and "app%3Daccess-log-list" in e["URI"]
        ),
    )
    assert entry["user"] == {
        "username": "admin",
        "uid": "admin-uid",
        "groups": ["system:masters", "system:authenticated"],
    }
    assert "impersonatedUser" not in entry
    assert entry["apiGroup"] == "resource.k8s.io"
    assert entry["apiVersion"] == "v1"
    assert entry["resp"] == 200
    assert entry["latency"].endswith("ms")
    assert float(entry["latency"][:-2]) >= 0
    assert entry["userAgent"].startswith("kubectl")
    assert entry["srcIP"].startswith("127.0.0.1:")


def test_a_named_get_in_a_namespace_names_both(logged: tuple[ServerProcess, str]) -> None:
    server, _ = logged
    result = server.kubectl("get", "resourceclaim", "no-such-claim", "-n", "default", check=False)
    assert "NotFound" in result.stderr
    entry = wait_for_entry(server, lambda e: _is(e, name="no-such-claim"))
    assert entry["verb"] == "get"
    assert entry["resource"] == "resourceclaims"
    assert entry["namespace"] == "default"
    assert entry["resp"] == 404
    assert entry["user"]["username"] == "admin"


def test_kubectl_as_names_the_impersonator_and_the_impersonated(
    logged: tuple[ServerProcess, str],
) -> None:
    server, _ = logged
    server.kubectl("get", "deviceclasses", "--as", "dora", "--as-group", "system:masters")
    entry = wait_for_entry(
        server,
        lambda e: (
            _is(e, resource="deviceclasses", verb="list")
            and e.get("impersonatedUser", {}).get("username") == "dora"
        ),
    )
    assert entry["user"]["username"] == "admin"  # who authenticated
    assert entry["impersonatedUser"] == {
        "username": "dora",
        "groups": ["system:masters", "system:authenticated"],
    }
    assert entry["resp"] == 200


def test_a_forbidden_request_names_the_user_it_refused(logged: tuple[ServerProcess, str]) -> None:
    server, carol = logged
    result = server.kubectl(
        f"--token={carol}", "get", "resourceclaims", "-n", "kube-system", check=False
    )
    assert 'User "carol" cannot list resource "resourceclaims"' in result.stderr
    entry = wait_for_entry(
        server, lambda e: _is(e, resource="resourceclaims", namespace="kube-system", resp=403)
    )
    assert entry["user"] == {
        "username": "carol",
        "uid": "carol-uid",
        "groups": ["team-c", "system:authenticated"],
    }
    assert entry["verb"] == "list"


def test_an_unknown_token_is_logged_as_401_without_a_user(
    logged: tuple[ServerProcess, str],
) -> None:
    server, _ = logged
    with server.client() as client:
        client.headers["Authorization"] = "Bearer not-a-token"
        assert client.get("/apis/resource.k8s.io/v1/deviceclasses?limit=7").status_code == 401
    entry = wait_for_entry(server, lambda e: e["URI"].endswith("deviceclasses?limit=7"))
    assert entry["resp"] == 401
    assert "user" not in entry
    # Every other line so far names its user, but those of the paths anyone may read
    # unauthenticated (the harness's readiness probe).
    public = ("/healthz", "/livez", "/readyz", "/version")
    unnamed = [e for e in access_entries(server) if "user" not in e and e["resp"] != 401]
    assert unnamed
    assert all(e["URI"] in public for e in unnamed)

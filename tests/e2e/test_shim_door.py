"""Only the scheduler gets through the shim's door: the real server and the real shim
process over HTTPS. Anonymous calls to /filter, /prioritize and /bind are 401 ``Status``
answers and bind nothing; a client certificate from a CA the shim does not trust is no
credential (401); the scheduler's certificate (from the shim's client CA) is accepted and
binds; a certificate from that CA for another user, and a bearer token of another user,
are 403; the scheduler's ServiceAccount token, checked by a TokenReview against the server,
is accepted; /healthz is open and /metrics needs a caller the shim knows."""

from __future__ import annotations

import concurrent.futures
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from apiserver.server.certs import cert_pem, issue_client_cert, key_pem, make_ca, write_client_cert

from .harness import ServerProcess, ShimProcess, shim_binding, start_server, start_shim_as
from .objects import is_status, unique

SCHEDULER_SA = "system:serviceaccount:dra-system:dra-extension-scheduler"
VERBS = ["filter", "prioritize", "bind"]


@pytest.fixture(scope="module")
def tokens() -> dict[str, str]:
    return {user: secrets.token_urlsafe(16) for user in ("admin", "shim", "scheduler", "mallory")}


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, tokens: dict[str, str]
) -> Iterator[ServerProcess]:
    """The shim's own identity holds only its role; the scheduler's ServiceAccount and
    mallory are known users with no role at all."""
    workdir = tmp_path_factory.mktemp("doorserver")
    token_file = workdir / "tokens.csv"
    token_file.write_text(
        f'{tokens["admin"]},admin,admin,"system:masters"\n'
        f"{tokens['shim']},shim,shim-uid\n"
        f"{tokens['scheduler']},{SCHEDULER_SA},scheduler-uid\n"
        f"{tokens['mallory']},mallory,mallory-uid\n"
    )
    proc = start_server(workdir, ["--token-auth-file", str(token_file)])
    proc.kubectl("apply", "-f", "-", input=shim_binding("shim"))
    proc.kubectl("apply", "-f", "-", input=yaml.safe_dump(_node("door-node")))
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def shim(
    server: ServerProcess, tokens: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ShimProcess]:
    proc = start_shim_as(
        server,
        tmp_path_factory.mktemp("doorshim"),
        "shim",
        tokens["shim"],
        ["--allowed-users", f"dra-extension-scheduler,{SCHEDULER_SA}"],
    )
    yield proc
    proc.stop()


def _node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def _pod(server: ServerProcess) -> dict[str, Any]:
    name = unique("door")
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    with server.client() as client:
        stored: dict[str, Any] = client.get(f"/api/v1/namespaces/default/pods/{name}").json()
    return stored


def _args(verb: str, pod: dict[str, Any]) -> dict[str, Any]:
    if verb == "bind":
        meta = pod["metadata"]
        return {
            "PodName": meta["name"],
            "PodNamespace": meta["namespace"],
            "PodUID": meta["uid"],
            "Node": "door-node",
        }
    return {"Pod": pod, "NodeNames": ["door-node"]}


def _node_of(server: ServerProcess, pod: dict[str, Any]) -> str | None:
    with server.client() as client:
        name = pod["metadata"]["name"]
        stored = client.get(f"/api/v1/namespaces/default/pods/{name}").json()
    node: str | None = stored["spec"].get("nodeName")
    return node


def _stranger_cert(directory: Path) -> tuple[Path, Path]:
    """A client certificate naming the scheduler, from a CA nobody configured."""
    ca = make_ca("someone-elses-ca")
    cert, key = issue_client_cert(*ca, "dra-extension-scheduler")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "stranger.crt").write_bytes(cert_pem(cert))
    (directory / "stranger.key").write_bytes(key_pem(key))
    return directory / "stranger.crt", directory / "stranger.key"


def _assert_refused(answer: httpx.Response, code: int) -> None:
    assert answer.status_code == code, answer.text
    body = answer.json()
    assert is_status(body, code)
    assert body["reason"] == ("Unauthorized" if code == 401 else "Forbidden")


@pytest.mark.parametrize("verb", VERBS)
def test_anonymous_calls_are_401_and_bind_nothing(
    server: ServerProcess, shim: ShimProcess, verb: str
) -> None:
    pod = _pod(server)
    with shim.anonymous_client() as client:
        _assert_refused(client.post(f"/{verb}", json=_args(verb, pod)), 401)
        # A bearer token the server never issued is no better.
        client.headers["Authorization"] = "Bearer not-a-token"
        _assert_refused(client.post(f"/{verb}", json=_args(verb, pod)), 401)
    assert _node_of(server, pod) is None


@pytest.mark.parametrize("verb", VERBS)
def test_a_certificate_from_an_untrusted_ca_is_refused(
    server: ServerProcess, shim: ShimProcess, verb: str, tmp_path: Path
) -> None:
    pod = _pod(server)
    with shim.client(cert=_stranger_cert(tmp_path)) as client:
        _assert_refused(client.post(f"/{verb}", json=_args(verb, pod)), 401)
    assert _node_of(server, pod) is None


@pytest.mark.parametrize("verb", VERBS)
def test_another_user_is_forbidden_by_certificate_or_token(
    server: ServerProcess, shim: ShimProcess, tokens: dict[str, str], verb: str, tmp_path: Path
) -> None:
    """Authenticated is not enough: a certificate the shim's client CA signed for alice,
    and mallory's valid token, are 403."""
    pod = _pod(server)
    alice = write_client_cert(shim.workdir / "certs", "alice", [], tmp_path / "alice")
    with shim.client(cert=alice) as client:
        _assert_refused(client.post(f"/{verb}", json=_args(verb, pod)), 403)
    with shim.anonymous_client() as client:
        client.headers["Authorization"] = f"Bearer {tokens['mallory']}"
        refused = client.post(f"/{verb}", json=_args(verb, pod))
        _assert_refused(refused, 403)
        assert "mallory" in refused.json()["message"]
    assert _node_of(server, pod) is None


def test_the_schedulers_certificate_is_accepted_and_binds(
    server: ServerProcess, shim: ShimProcess
) -> None:
    pod = _pod(server)
    with shim.client() as client:
        filtered = client.post("/filter", json=_args("filter", pod))
        assert filtered.status_code == 200, filtered.text
        assert filtered.json()["NodeNames"] == ["door-node"]
        scored = client.post("/prioritize", json=_args("prioritize", pod))
        assert scored.status_code == 200, scored.text
        assert [h["Host"] for h in scored.json()] == ["door-node"]
        bound = client.post("/bind", json=_args("bind", pod))
        assert bound.status_code == 200, bound.text
        assert bound.json() == {"Error": ""}
    assert _node_of(server, pod) == "door-node"


def test_the_schedulers_token_is_checked_by_token_review_and_accepted(
    server: ServerProcess, shim: ShimProcess, tokens: dict[str, str]
) -> None:
    pod = _pod(server)
    with shim.anonymous_client() as client:
        client.headers["Authorization"] = f"Bearer {tokens['scheduler']}"
        filtered = client.post("/filter", json=_args("filter", pod))
        assert filtered.status_code == 200, filtered.text
        assert filtered.json()["NodeNames"] == ["door-node"]
        bound = client.post("/bind", json=_args("bind", pod))
        assert bound.status_code == 200, bound.text
        assert bound.json() == {"Error": ""}
    assert _node_of(server, pod) == "door-node"


def test_health_is_open_and_metrics_need_a_known_caller(
    shim: ShimProcess, tokens: dict[str, str]
) -> None:
    with shim.anonymous_client() as client:
        assert client.get("/healthz").status_code == 200
        _assert_refused(client.get("/metrics"), 401)
        client.headers["Authorization"] = f"Bearer {tokens['mallory']}"
        assert client.get("/metrics").status_code == 200


def test_many_callers_at_once_each_get_their_own_answer(
    server: ServerProcess, shim: ShimProcess, tokens: dict[str, str], tmp_path: Path
) -> None:
    """Several rounds of concurrent calls over kept-alive connections, the scheduler's and
    strangers' interleaved: a connection's certificate never lends itself to another."""
    pod = _pod(server)
    stranger = _stranger_cert(tmp_path)
    clients = {
        "scheduler": (shim.client(), 200),
        "anonymous": (shim.anonymous_client(), 401),
        "stranger": (shim.client(cert=stranger), 401),
        "mallory": (
            shim.anonymous_client(headers={"Authorization": f"Bearer {tokens['mallory']}"}),
            403,
        ),
    }

    def call(who: str) -> tuple[str, int]:
        client, _ = clients[who]
        return who, client.post("/filter", json=_args("filter", pod)).status_code

    try:
        for _ in range(3):
            callers = list(clients) * 8
            with concurrent.futures.ThreadPoolExecutor(len(callers)) as pool:
                answers = list(pool.map(call, callers))
            assert [code for _, code in answers] == [clients[who][1] for who, _ in answers]
    finally:
        for client, _ in clients.values():
            client.close()
